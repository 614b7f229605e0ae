package crdt

import (
	"testing"
)

const (
	benchEntities   = 10_000
	benchComponents = 3
	benchMessages   = 1_000_000
	benchPayload    = 44 // a Transform-sized value
	benchKeys       = benchEntities * benchComponents
)

// benchStream builds 1,000,000 PUT messages over 10,000 entities × 3 components with 44-byte
// payloads. Message i writes key i % 30,000 at timestamp i / 30,000 + 1, so every message is
// newer than the previous one for its key: each one is Applied.
func benchStream() []byte {
	stream := make([]byte, 0, benchMessages*(putHeader+benchPayload))
	data := make([]byte, benchPayload)
	var m Message
	for i := range benchMessages {
		k := i % benchKeys
		for j := range data {
			data[j] = byte(i + j)
		}
		m = Message{
			Type:      PutComponent,
			Entity:    NewEntity(uint16(512+k/benchComponents), 0),
			Component: ComponentID(1 + k%benchComponents),
			Timestamp: Timestamp(i/benchKeys + 1),
			Data:      data,
		}
		stream = AppendMessage(stream, &m)
	}
	return stream
}

// bumpTimestamps adds delta to every timestamp of a benchStream, so that merging it again
// applies every message again.
func bumpTimestamps(stream []byte, delta uint32) {
	const size = putHeader + benchPayload
	for off := 0; off+size <= len(stream); off += size {
		le.PutUint32(stream[off+16:], le.Uint32(stream[off+16:])+delta)
	}
}

// BenchmarkDecodeMerge decodes and merges the 1,000,000-message stream. "steady": the keys
// exist (a first pass created them, untimed) and every message is Applied into a reused buffer.
// "fresh": each iteration starts from an empty replica, so the first 30,000 messages create
// their keys.
func BenchmarkDecodeMerge(b *testing.B) {
	stream := benchStream()
	b.Run("steady", func(b *testing.B) {
		r := New(Config{})
		if _, err := r.MergeStream(stream); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			bumpTimestamps(stream, benchMessages/benchKeys+1)
			b.StartTimer()
			applied, err := r.MergeStream(stream)
			if err != nil || applied != benchMessages {
				b.Fatalf("applied %d, %v", applied, err)
			}
		}
		b.ReportMetric(float64(benchMessages)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("fresh", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for range b.N {
			r := New(Config{})
			if _, err := r.MergeStream(stream); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchMessages)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("echo", func(b *testing.B) {
		// Every message is already known (NoChange at equal stamps: a full byte compare).
		r := New(Config{})
		if _, err := r.MergeStream(stream); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := r.MergeStream(stream); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchMessages)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

func BenchmarkMergeExistingKey(b *testing.B) {
	r := New(Config{})
	m := Message{Type: PutComponent, Entity: NewEntity(600, 0), Component: 1, Data: make([]byte, benchPayload)}
	r.Merge(&m)
	b.SetBytes(int64(SizeMessage(&m)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.Timestamp++
		if r.Merge(&m) != Applied {
			b.Fatal("not applied")
		}
	}
}

func BenchmarkConsumeMessage(b *testing.B) {
	m := Message{Type: PutComponent, Entity: NewEntity(600, 0), Component: 1, Data: make([]byte, benchPayload)}
	wire := AppendMessage(nil, &m)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for range b.N {
		if _, err := ConsumeMessage(wire, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReplica(b *testing.B) *Replica {
	r := New(Config{})
	stream := benchStream()
	if _, err := r.MergeStream(stream[:benchKeys*(putHeader+benchPayload)]); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkAppendState(b *testing.B) {
	r := benchReplica(b)
	buf := r.AppendState(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf = r.AppendState(buf[:0])
	}
	b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkHash: a Hash after nothing changed (the sums are up to date).
func BenchmarkHash(b *testing.B) {
	r := benchReplica(b)
	r.Hash()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Hash()
	}
}

// BenchmarkHashFromScratch: the first Hash of a replica, every entity to sum.
func BenchmarkHashFromScratch(b *testing.B) {
	r := benchReplica(b)
	b.SetBytes(int64(len(r.AppendState(nil))))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range r.dirty {
			r.dirty[i] = ^uint64(0)
		}
		r.nDirty = 0x10000
		r.Hash()
	}
}

// BenchmarkHashAfterMoves: 100 entities of the replica changed since the last Hash, as in a room
// where 100 entities move every tick.
func BenchmarkHashAfterMoves(b *testing.B) {
	r := benchReplica(b)
	r.Hash()
	val := []byte("moved")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range 100 {
			r.Put(NewEntity(uint16(512+(i*100+j)%benchEntities), 0), 1, val)
		}
		r.Hash()
	}
}

// BenchmarkBucketDigests: 256 digests after 100 entities changed.
func BenchmarkBucketDigests(b *testing.B) {
	r := benchReplica(b)
	d := r.BucketDigests(256, nil)
	val := []byte("moved")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range 100 {
			r.Put(NewEntity(uint16(512+(i*100+j)%benchEntities), 0), 1, val)
		}
		d = r.BucketDigests(256, d[:0])
	}
}

// BenchmarkSortedLWW sorts the 30,000 LWW keys of the bench replica into canonical order, as
// the first Range after the key set changed does (a host's snapshot after a member's avatar
// spawned).
func BenchmarkSortedLWW(b *testing.B) {
	r := benchReplica(b)
	b.ReportAllocs()
	for b.Loop() {
		r.lwwOrderOK = false
		r.sortedLWW()
	}
}
