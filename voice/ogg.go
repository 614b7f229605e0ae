package voice

import (
	"fmt"
	"io"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4/pkg/media/oggreader"
	"github.com/pion/webrtc/v4/pkg/media/oggwriter"
)

// WriteSilence writes an Ogg Opus stream of n 20 ms packets to w, one packet per page, each a
// valid Opus frame (TOC 0xFC: CELT fullband 20 ms, stereo, one frame) of silence. For tests, bots
// and concord bench voice: the forwarder never decodes audio.
func WriteSilence(w io.Writer, n int) error {
	ow, err := oggwriter.NewWith(nopCloser{w}, opusClock, 2)
	if err != nil {
		return fmt.Errorf("voice: ogg: %w", err)
	}
	for i := range n {
		p := &rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: uint16(i), Timestamp: uint32(i * minSpurtGap)},
			Payload: []byte{0xFC, 0xFF, 0xFE}}
		if err := ow.WriteRTP(p); err != nil {
			return fmt.Errorf("voice: ogg: %w", err)
		}
	}
	return ow.Close()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// CheckOgg reports whether r starts as an Ogg Opus stream.
func CheckOgg(r io.Reader) error {
	_, _, err := oggreader.NewWith(r)
	if err != nil {
		return fmt.Errorf("voice: not an Ogg Opus stream: %w", err)
	}
	return nil
}
