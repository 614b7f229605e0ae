package link

import (
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/sctp"
	"github.com/pion/webrtc/v4"
)

// The carried pion/sctp (third_party/pion-sctp, CONCORD-PATCH.md items 7–9) adds three methods to
// sctp.Stream that stock pion/sctp does not have. Go ignores a dependency's replace lines, so a
// program that imports this package builds it against stock pion unless its own go.mod carries
// the same replace; the methods are therefore reached through interfaces, checked once per
// stream, and each has a fallback with the same semantics that is only slower:
//
//   - owned writes (WriteSCTPOwned, WriteSCTPOwnedBatch): the fallback is the detached data
//     channel's Write, which copies the payload into its chunks before it returns, so the
//     caller's promise never to write the buffer again holds trivially; a batch is written
//     message by message, stopping at the first error (OwnedBatchSender's rule); the drop rule
//     of the unreliable channel is applied before either path, by Conn.send and Conn.SendOwnedBatch;
//   - ack coalescing (SetAckCoalescing): without it the receiver acknowledges every second
//     packet, RFC 9260 §6.2's rule (Config.AckCoalescing has no effect).

// ownedWriter is sctp.Stream.WriteSCTPOwned of the carried pion/sctp: WriteSCTP whose chunks
// reference payload instead of copying it.
type ownedWriter interface {
	WriteSCTPOwned(payload []byte, ppi sctp.PayloadProtocolIdentifier) (int, error)
}

// ownedBatchWriter is sctp.Stream.WriteSCTPOwnedBatch of the carried pion/sctp: WriteSCTPOwned of
// each payload with the stream's and association's locks taken once; a refused batch writes nothing.
type ownedBatchWriter interface {
	WriteSCTPOwnedBatch(payloads [][]byte, ppi sctp.PayloadProtocolIdentifier) error
}

// ackCoalescer is sctp.Stream.SetAckCoalescing of the carried pion/sctp (its association's).
type ackCoalescer interface {
	SetAckCoalescing(window time.Duration)
}

// FastPaths reports whether this program's pion/sctp is Concord's carried copy, whose owned writes
// and ack coalescing Conn uses (README "Carried pion patches"): true only in a program whose go.mod
// has `replace github.com/pion/sctp => …/third_party/pion-sctp`. Without it a Conn is correct and
// costs its host more CPU per datagram.
func FastPaths() bool {
	s := any((*sctp.Stream)(nil))
	_, owned := s.(ownedWriter)
	_, batch := s.(ownedBatchWriter)
	_, coalesce := s.(ackCoalescer)
	return owned && batch && coalesce
}

// setAckCoalescing sets the coalescing window of stream's association where pion/sctp can (the
// carried copy); stock pion/sctp acknowledges every second packet.
func setAckCoalescing(stream *sctp.Stream, window time.Duration) {
	if c, ok := any(stream).(ackCoalescer); ok {
		c.SetAckCoalescing(window)
	}
}

// newChanState is the state of an open channel ch whose detached data channel rw has the SCTP
// stream stream, with the carried pion/sctp's owned writes when stream has them.
func newChanState(ch Channel, dc *webrtc.DataChannel, rw datachannel.ReadWriteCloser, stream *sctp.Stream) *chanState {
	st := &chanState{ch: ch, dc: dc, rw: rw}
	st.owned, _ = any(stream).(ownedWriter)
	st.batch, _ = any(stream).(ownedBatchWriter)
	return st
}
