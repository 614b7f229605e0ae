package voice

import (
	"testing"
	"time"

	"github.com/pion/rtp"
)

// fakeTrack records what a slot writes, without allocating.
type fakeTrack struct {
	n       int
	lastSeq uint16
	lastTS  uint32
	breaks  int
	level   byte
}

func (f *fakeTrack) WriteRTP(p *rtp.Packet) error {
	if f.n > 0 && p.SequenceNumber != f.lastSeq+1 {
		f.breaks++
	}
	if e := p.GetExtension(1); len(e) == 1 {
		f.level = e[0]
	}
	f.n++
	f.lastSeq, f.lastTS = p.SequenceNumber, p.Timestamp
	return nil
}

func packet(seq uint16, ts uint32, level byte) []byte {
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: seq, Timestamp: ts, SSRC: 7}, Payload: []byte{0xFC, 1, 2, 3}}
	_ = p.Header.SetExtension(1, []byte{level})
	b, _ := p.Marshal()
	return b
}

// TestForwardAllocs: the per-packet path (bucket, parse, level, rewrite, write to three slots)
// allocates nothing.
func TestForwardAllocs(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPublisher(nil, 1, false, 0, now)
	tracks := []*fakeTrack{{}, {}, {}}
	slots := make([]*slot, len(tracks))
	for i, tr := range tracks {
		slots[i] = &slot{w: tr, levelID: 1}
		slots[i].setSpeaker(p)
	}
	p.fanout.Store(&slots)
	seq := uint16(100)
	buf := packet(seq, 0, 40)
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		buf[2], buf[3] = byte(seq>>8), byte(seq)
		now = now.Add(20 * time.Millisecond)
		if n, why, err := p.handle(buf, now); n != 3 || why != dropNone || err != nil {
			t.Fatalf("handle: %d %v %v", n, why, err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per forwarded packet, want 0", allocs)
	}
	if tracks[0].level != 40 || tracks[0].breaks != 0 {
		t.Fatalf("level %d, sequence breaks %d", tracks[0].level, tracks[0].breaks)
	}
}

// TestSlotContinuity: a slot's sequence numbers step by one and its RTP clock moves forward by
// at least a frame across a change of speaker, whatever the speakers' own numbering.
func TestSlotContinuity(t *testing.T) {
	now := time.Unix(1000, 0)
	a := newPublisher(nil, 0, false, 0, now)
	b := newPublisher(nil, 0, false, 0, now)
	tr := &fakeTrack{}
	s := &slot{w: tr}
	s.setSpeaker(a)
	one := []*slot{s}
	a.fanout.Store(&one)
	for i := range 10 {
		now = now.Add(20 * time.Millisecond)
		_, _, _ = a.handle(packet(uint16(5000+i), uint32(90000+960*i), 127), now)
	}
	lastTS := tr.lastTS
	s.setSpeaker(b)
	b.fanout.Store(&one)
	a.fanout.Store(&[]*slot{})
	now = now.Add(5 * time.Millisecond)
	for i := range 10 {
		now = now.Add(20 * time.Millisecond)
		_, _, _ = b.handle(packet(uint16(60000+i), uint32(7+960*i), 127), now)
	}
	if tr.n != 20 || tr.breaks != 0 {
		t.Fatalf("%d packets, %d sequence breaks across the change of speaker", tr.n, tr.breaks)
	}
	if d := tr.lastTS - lastTS; d < 10*960 || d > 12*960 {
		t.Fatalf("the slot's clock moved %d across 10 packets and a change of speaker", d)
	}
}

// TestBucket: a publisher over its bitrate has its packets dropped.
func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBucket(8000, now) // 1000 bytes/s
	sent := 0
	for range 100 { // 2000 bytes/s for 2 s
		now = now.Add(20 * time.Millisecond)
		if b.take(40, now) {
			sent++
		}
	}
	if sent < 45 || sent > 80 {
		t.Fatalf("%d of 100 packets of 40 bytes at 50/s passed a 1000 B/s bucket", sent)
	}
}

func BenchmarkForward(b *testing.B) {
	now := time.Unix(1000, 0)
	p := newPublisher(nil, 1, false, 0, now)
	slots := make([]*slot, 8)
	for i := range slots {
		slots[i] = &slot{w: &fakeTrack{}, levelID: 1}
		slots[i].setSpeaker(p)
	}
	p.fanout.Store(&slots)
	buf := packet(1, 0, 40)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf[2], buf[3] = byte(i>>8), byte(i)
		now = now.Add(20 * time.Millisecond)
		_, _, _ = p.handle(buf, now)
	}
}
