package voice

import (
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
)

// silence is the RFC 6464 level of no sound (−127 dBov).
const silence = 127

// publisher is a member's microphone as the forwarder receives it. Its read goroutine owns the
// bucket and the read buffers; the loop writes fanout; level, muted are shared atomically.
type publisher struct {
	sess    *session
	levelID uint8 // the speaker's id of the audio-level extension, 0 when not negotiated
	// listenOnly: the token does not let the member speak; every packet is dropped and counted.
	listenOnly bool

	fanout atomic.Pointer[[]*slot] // the slots that carry this speaker now (the loop's, swapped whole)
	muted  atomic.Bool
	// level is the loudest level (lowest RFC 6464 value) since the loop last took it.
	level atomic.Uint32

	bucket bucket
	pkt    rtp.Packet
}

func newPublisher(s *session, levelID uint8, listenOnly bool, maxBitrate int, now time.Time) *publisher {
	p := &publisher{sess: s, levelID: levelID, listenOnly: listenOnly}
	p.level.Store(silence)
	p.bucket = newBucket(maxBitrate, now)
	empty := []*slot{}
	p.fanout.Store(&empty)
	return p
}

// takeLevel returns the loudest level since the last call and starts a new window.
func (p *publisher) takeLevel() uint8 { return uint8(p.level.Swap(silence)) }

// noteLevel keeps the loudest level of the window.
func (p *publisher) noteLevel(v uint8) {
	for {
		cur := p.level.Load()
		if uint32(v) >= cur || p.level.CompareAndSwap(cur, uint32(v)) {
			return
		}
	}
}

// dropReason says why a packet read from a publisher was not forwarded; dropNone: it was.
type dropReason uint8

const (
	dropNone dropReason = iota
	dropListenOnly
	dropBitrate
	dropMalformed
	dropMuted
	dropReasons
)

func (r dropReason) String() string {
	switch r {
	case dropNone:
		return "none"
	case dropListenOnly:
		return "listen_only"
	case dropBitrate:
		return "bitrate"
	case dropMalformed:
		return "malformed"
	case dropMuted:
		return "muted"
	case dropReasons:
	}
	return "unknown"
}

// handle takes one RTP packet b read from the publisher's track at now and forwards it to every
// slot of its fan-out. It returns the slots written and why it dropped the packet. It is the hot
// path: it does not allocate (TestForwardAllocs).
func (p *publisher) handle(b []byte, now time.Time) (int, dropReason, error) {
	if p.listenOnly {
		return 0, dropListenOnly, nil
	}
	if !p.bucket.take(len(b), now) {
		return 0, dropBitrate, nil
	}
	if err := p.pkt.Unmarshal(b); err != nil {
		return 0, dropMalformed, nil
	}
	if p.muted.Load() {
		return 0, dropMuted, nil
	}
	var level []byte
	if p.levelID != 0 {
		if ext := p.pkt.GetExtension(p.levelID); len(ext) >= 1 {
			level = ext[:1]
			p.noteLevel(ext[0] & 0x7f)
		}
	}
	n := 0
	var first error
	for _, s := range *p.fanout.Load() {
		ok, err := s.forward(p, &p.pkt, level, now)
		if ok && err == nil {
			n++
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return n, dropNone, first
}

// bucket is a token bucket of bytes: rate bytes a second, holding at most one second's worth.
// rate 0 admits everything.
type bucket struct {
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
}

func newBucket(bitrate int, now time.Time) bucket {
	r := float64(bitrate) / 8
	return bucket{rate: r, tokens: r, last: now}
}

// take spends n bytes, or reports false (and spends nothing) when the bucket holds fewer.
func (b *bucket) take(n int, now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.rate, b.tokens+b.rate*dt.Seconds())
		b.last = now
	}
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}
