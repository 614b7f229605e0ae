package voice

import (
	"sync"
	"time"

	"github.com/pion/rtp"
)

// rtpWriter is where a slot's packets go: a *webrtc.TrackLocalStaticRTP, or a fake in tests.
type rtpWriter interface {
	WriteRTP(p *rtp.Packet) error
}

// opusClock is Opus's RTP clock rate (RFC 7587 §4.1): 48 kHz whatever the sampling rate.
const opusClock = 48000

// minSpurtGap is the least a slot's RTP clock advances at a change of speaker: one 20 ms frame, so
// that the new speaker's first packet never overlaps the last one's.
const minSpurtGap = opusClock / 50

// slot is one of a listener's receive sections: one RTP stream (the track's SSRC, set by pion per
// binding) that carries one speaker at a time. The loop changes speaker (setSpeaker); the
// speakers' read goroutines forward into it. mu guards everything below it.
type slot struct {
	mid     string
	w       rtpWriter
	levelID uint8 // the listener's id of the audio-level extension, 0 when not negotiated

	mu      sync.Mutex
	speaker *publisher // nil: empty
	// fresh: the next packet of speaker starts a talkspurt on this slot (new offsets).
	fresh   bool
	started bool // a packet was ever written
	seqOff  uint16
	tsOff   uint32
	lastSeq uint16
	lastTS  uint32
	lastAt  time.Time
	out     rtp.Packet // reused for every write: the rewrite does not allocate
	ext     [1]rtp.Extension
}

// setSpeaker gives the slot to p (nil empties it). It is the loop's; the rewrite offsets are
// computed at p's first packet.
func (s *slot) setSpeaker(p *publisher) {
	s.mu.Lock()
	if s.speaker != p {
		s.speaker, s.fresh = p, true
	}
	s.mu.Unlock()
}

// current returns the slot's speaker.
func (s *slot) current() *publisher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.speaker
}

// forward rewrites pkt (from speaker p, whose audio-level extension payload is level, nil when
// none) onto the slot's stream and writes it. It returns false, writing nothing, when the slot
// is no longer p's. pkt is not modified; its payload is written before forward returns.
func (s *slot) forward(p *publisher, pkt *rtp.Packet, level []byte, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.speaker != p {
		return false, nil
	}
	if s.fresh {
		s.fresh = false
		if s.started {
			// Continue the slot's stream: the next sequence number, and the RTP clock advanced by
			// the wall-clock time since its last packet (at least one frame).
			gap := uint32(now.Sub(s.lastAt) * opusClock / time.Second)
			gap = max(gap, minSpurtGap)
			s.seqOff = s.lastSeq + 1 - pkt.SequenceNumber
			s.tsOff = s.lastTS + gap - pkt.Timestamp
		} else {
			s.seqOff, s.tsOff = 0, 0
		}
	}
	seq := pkt.SequenceNumber + s.seqOff
	ts := pkt.Timestamp + s.tsOff
	if !s.started || int16(seq-s.lastSeq) > 0 {
		s.lastSeq, s.lastTS, s.lastAt = seq, ts, now
	}
	s.started = true

	o := &s.out
	o.Header = rtp.Header{
		Version:        2,
		Marker:         pkt.Marker,
		PayloadType:    pkt.PayloadType, // pion's track sets the listener's
		SequenceNumber: seq,
		Timestamp:      ts,
		SSRC:           pkt.SSRC, // pion's track sets the slot's
	}
	if level != nil && s.levelID != 0 {
		// Only the audio level goes on, under the listener's id for it: the speaker's other
		// extensions (and its ids) mean nothing on this stream.
		s.ext[0] = rtp.Extension{}
		o.Header.Extension = true
		o.Header.ExtensionProfile = rtp.ExtensionProfileOneByte
		o.Header.Extensions = s.ext[:0]
		if err := o.Header.SetExtension(s.levelID, level); err != nil {
			o.Header.Extension, o.Header.Extensions = false, nil
		}
	}
	o.Payload = pkt.Payload
	err := s.w.WriteRTP(o)
	o.Payload = nil
	return true, err
}
