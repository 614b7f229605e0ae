package netmsg

import "testing"

func BenchmarkEntityUpdatesEncode(b *testing.B) {
	full := fullDatagram()
	buf := make([]byte, 0, MaxDatagram)
	var w EntityUpdatesWriter
	b.SetBytes(MaxDatagram)
	b.ReportAllocs()
	for b.Loop() {
		w.Reset(buf, full.Time, MaxDatagram)
		for i := range full.Updates {
			if !w.Add(&full.Updates[i]) {
				break
			}
		}
	}
	if w.Len() != MaxDatagram {
		b.Fatalf("datagram of %d bytes", w.Len())
	}
}

func BenchmarkEntityUpdatesDecode(b *testing.B) {
	full := fullDatagram()
	datagram := AppendEntityUpdates(nil, &full)
	var m EntityUpdates
	b.SetBytes(int64(len(datagram)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ConsumeEntityUpdates(datagram, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaderDatagram(b *testing.B) {
	full := fullDatagram()
	datagram := AppendEntityUpdates(nil, &full)
	var r Reader
	b.SetBytes(int64(len(datagram)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(datagram)
		for r.More() {
			if _, err := r.Next(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkHostSnapshotEncode(b *testing.B) {
	snap := benchSnapshot(1000)
	buf := AppendHostSnapshot(nil, &snap)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendHostSnapshot(buf[:0], &snap)
	}
}

func BenchmarkHostSnapshotDecode(b *testing.B) {
	snap := benchSnapshot(1000)
	buf := AppendHostSnapshot(nil, &snap)
	var m HostSnapshot
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ConsumeHostSnapshot(buf, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFragmentReassemble(b *testing.B) {
	snap := benchSnapshot(1000)
	payload := AppendHostSnapshot(nil, &snap)
	buf := make([]byte, 0, MaxReliableMessage)
	var r Reassembler
	var fr Fragment
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		f := NewFragmenter(payload, 1, 0)
		for {
			var ok bool
			if buf, ok = f.Next(buf[:0]); !ok {
				break
			}
			if _, err := ConsumeFragment(buf, &fr); err != nil {
				b.Fatal(err)
			}
			if _, _, err := r.Push(&fr); err != nil {
				b.Fatal(err)
			}
		}
	}
}
