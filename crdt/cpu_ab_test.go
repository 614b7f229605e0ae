package crdt

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func streamKeys(keys, msgs int) []byte {
	var out []byte
	data := make([]byte, benchPayload)
	for i := range msgs {
		k := i % keys
		m := Message{Type: PutComponent, Entity: NewEntity(uint16(512+k/3), 0), Component: ComponentID(1 + k%3), Timestamp: Timestamp(i/keys + 1), Data: data}
		out = AppendMessage(out, &m)
	}
	return out
}

func TestCPUAB(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, keys := range []int{300, 3000, 30000} {
		stream := streamKeys(keys, 1_000_000)
		var best time.Duration
		r := New(Config{})
		r.MergeStream(stream)
		for k := 0; k < 8; k++ {
			bumpTimestamps(stream, uint32(1_000_000/keys+1))
			c0 := threadCPU()
			r.MergeStream(stream)
			d := threadCPU() - c0
			if best == 0 || d < best {
				best = d
			}
		}
		var m Message
		c0 := threadCPU()
		for k := 0; k < 4; k++ {
			for off := 0; off < len(stream); {
				n, _ := ConsumeMessage(stream[off:], &m)
				off += n
			}
		}
		dec := (threadCPU() - c0) / 4
		t.Logf("keys=%d: merge %v per 1M msgs = %.1f M msgs/s; decode only %v", keys, best, 1e6/best.Seconds()/1e6, dec)
	}
}

func TestCPUDecodeSmall(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stream := streamKeys(300, 10_000)
	var m Message
	best := time.Duration(0)
	for round := 0; round < 5; round++ {
		c0 := threadCPU()
		for k := 0; k < 100; k++ {
			for off := 0; off < len(stream); {
				n, _ := ConsumeMessage(stream[off:], &m)
				off += n
			}
		}
		d := threadCPU() - c0
		if best == 0 || d < best {
			best = d
		}
	}
	r := New(Config{})
	r.MergeStream(stream)
	bestM := time.Duration(0)
	for round := 0; round < 5; round++ {
		c0 := threadCPU()
		for k := 0; k < 100; k++ {
			bumpTimestamps(stream, 40)
			r.MergeStream(stream)
		}
		d := threadCPU() - c0
		if bestM == 0 || d < bestM {
			bestM = d
		}
	}
	t.Logf("in-cache decode %v per 1M msgs, merge(+bump) %v per 1M", best, bestM)
}
