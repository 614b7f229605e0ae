package netmsg

import (
	"reflect"
	"testing"
)

// TestPackedUpdatesWriter fills datagrams as EntityUpdatesWriter does: never past the limit, every
// update decoded back, no allocation once the buffers are warm, and fewer bytes than EntityUpdates
// for the same updates.
func TestPackedUpdatesWriter(t *testing.T) {
	ups := make([]Update, 300)
	for i := range ups {
		ups[i] = Update{NetworkID: uint64(512 + i), Width: Width8, Mask: 0x03, Data: pattern(14, byte(i))}
	}
	var pw PackedUpdatesWriter
	var ew EntityUpdatesWriter
	buf, ebuf := make([]byte, 0, MaxDatagram), make([]byte, 0, MaxDatagram)
	var got []Update
	packed, plain := 0, 0
	fill := func() {
		pw.Reset(buf[:0], 1234, MaxDatagram)
		ew.Reset(ebuf[:0], 1234, MaxDatagram)
		for i := range ups {
			if !pw.Add(&ups[i]) {
				break
			}
		}
		for i := range ups {
			if !ew.Add(&ups[i]) {
				break
			}
		}
	}
	fill()
	if pw.Len() > MaxDatagram || pw.Count() == 0 {
		t.Fatalf("packed datagram of %d bytes, %d updates", pw.Len(), pw.Count())
	}
	var m EntityUpdates
	n, err := ConsumePackedUpdates(pw.Bytes(), &m)
	if err != nil || n != pw.Len() || m.Time != 1234 {
		t.Fatalf("decode: n=%d err=%v time=%d", n, err, m.Time)
	}
	got = m.Updates
	if !reflect.DeepEqual(got, ups[:pw.Count()]) {
		t.Fatal("decoded updates differ")
	}
	packed, plain = pw.Count(), ew.Count()
	if packed <= plain {
		t.Fatalf("a datagram holds %d packed updates, %d plain", packed, plain)
	}
	t.Logf("updates per %d-byte datagram: %d packed, %d EntityUpdates", MaxDatagram, packed, plain)
	if a := testing.AllocsPerRun(100, func() {
		fill()
		_, _ = ConsumePackedUpdates(pw.Bytes(), &m)
	}); a != 0 {
		t.Errorf("%v allocations per datagram", a)
	}
}

// TestRunUpdatesWriter: consecutive entities' updates of one mask and length share a run, so a
// datagram holds more of them than PackedUpdates (the bench's 14-byte values: 81 against 63);
// never past the limit, every update decoded back, no allocation once the buffers are warm.
func TestRunUpdatesWriter(t *testing.T) {
	ups := make([]Update, 300)
	for i := range ups {
		ups[i] = Update{NetworkID: uint64(512 + i), Width: Width8, Mask: 0x03, Data: pattern(14, byte(i))}
	}
	var rw RunUpdatesWriter
	var pw PackedUpdatesWriter
	buf, pbuf := make([]byte, 0, MaxDatagram), make([]byte, 0, MaxDatagram)
	fill := func() {
		rw.Reset(buf[:0], 1234, MaxDatagram)
		pw.Reset(pbuf[:0], 1234, MaxDatagram)
		for i := range ups {
			if !rw.Add(&ups[i]) {
				break
			}
		}
		for i := range ups {
			if !pw.Add(&ups[i]) {
				break
			}
		}
	}
	fill()
	if rw.Len() > MaxDatagram || rw.Count() == 0 {
		t.Fatalf("datagram of %d bytes, %d updates", rw.Len(), rw.Count())
	}
	var m EntityUpdates
	n, err := ConsumeRunUpdates(rw.Bytes(), &m)
	if err != nil || n != rw.Len() || m.Time != 1234 {
		t.Fatalf("decode: n=%d err=%v time=%d", n, err, m.Time)
	}
	if !reflect.DeepEqual(m.Updates, ups[:rw.Count()]) {
		t.Fatal("decoded updates differ")
	}
	if rw.Count() != 81 || pw.Count() != 63 {
		t.Fatalf("a datagram holds %d updates in runs, %d packed; want 81 and 63", rw.Count(), pw.Count())
	}
	if a := testing.AllocsPerRun(100, func() {
		fill()
		_, _ = ConsumeRunUpdates(rw.Bytes(), &m)
	}); a != 0 {
		t.Errorf("%v allocations per datagram", a)
	}
}
