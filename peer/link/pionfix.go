package link

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/pion/datachannel"
	"github.com/pion/sctp"
)

// pion quirk (webrtc v4.2.20, datachannel v1.6.2, sctp v1.11.1; still so in webrtc v4.2.26,
// datachannel v1.6.3, sctp v1.12.0: re-checked 2026-11-24, the vnet test fails without it): a
// *negotiated* data channel never applies its reliability parameters to its
// SCTP stream. datachannel.Client skips the DCEP OPEN for negotiated channels,
// and the only other place that calls the unexported commitReliabilityParams
// is the handler of the DCEP ACK, which never comes. The stream keeps its
// defaults: ordered and fully reliable. So a channel created with
// {Negotiated: true, Ordered: false, MaxRetransmits: 0} reports Ordered()
// false and MaxRetransmits() 0, yet every message is sent ordered and
// retransmitted until acknowledged: the "unreliable" channel head-of-line
// blocks behind losses like the reliable one. (The vnet test in this package
// fails without the fix below.)
//
// The stream is unexported and pion offers no other way to set it, so
// applyReliability reaches it through reflection and calls the exported
// sctp.Stream.SetReliabilityParams with exactly what commitReliabilityParams
// would have used. It checks the field's type first and returns
// ErrPionInternals if pion's layout ever changes, so an upgrade fails loudly
// instead of silently sending reliable "unreliable" traffic.
//
// SCTP ordering and partial reliability are properties of the sending side
// (the U bit and the PR-SCTP policy of each DATA chunk), so fixing our own
// streams is enough; a browser peer sets its own correctly. The flag also
// tells our receive side how to apply FORWARD-TSN to incomplete unordered
// fragments.

// streamOf returns the SCTP stream under a detached data channel. Conn.SendOwned
// also writes to it (sctp.Stream.WriteSCTPOwned, in Concord's carried pion/sctp),
// which datachannel.DataChannel has no method for.
func streamOf(rw datachannel.ReadWriteCloser) (*sctp.Stream, error) {
	dc, ok := rw.(*datachannel.DataChannel)
	if !ok || dc == nil {
		return nil, fmt.Errorf("%w: detached data channel is %T, want *datachannel.DataChannel", ErrPionInternals, rw)
	}
	field := reflect.ValueOf(dc).Elem().FieldByName("stream")
	if !field.IsValid() || field.Type() != reflect.TypeFor[*sctp.Stream]() {
		return nil, fmt.Errorf("%w: datachannel.DataChannel has no stream *sctp.Stream field", ErrPionInternals)
	}
	// The field is unexported, so reflection may read but not Interface() it;
	// NewAt gives an addressable view of the same memory.
	stream := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(*sctp.Stream)
	if stream == nil {
		return nil, fmt.Errorf("%w: data channel has a nil SCTP stream", ErrPionInternals)
	}
	return stream, nil
}

// applyReliability sets a data channel's stream (streamOf) to ch's delivery mode.
func applyReliability(stream *sctp.Stream, ch Channel) error {
	switch ch {
	case Reliable:
		stream.SetReliabilityParams(false, sctp.ReliabilityTypeReliable, 0)
	case Unreliable:
		// Unordered, partial reliability by retransmission count 0: every
		// message is transmitted once and abandoned if lost.
		stream.SetReliabilityParams(true, sctp.ReliabilityTypeRexmit, 0)
	default:
		return fmt.Errorf("%w: %d", ErrBadChannel, ch)
	}
	return nil
}
