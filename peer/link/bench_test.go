package link

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// benchPair connects two Conns on loopback (a with the shared UDP mux, b with
// its own socket) and counts what b receives.
func benchPair(b *testing.B) (*pair, *atomic.Int64) {
	b.Helper()
	var got atomic.Int64
	p := newPair(b, pairOpts{
		cfgA:     Config{Logger: zerolog.Nop()},
		cfgB:     Config{Logger: zerolog.Nop(), DisableUDPMux: true},
		handlerB: func(Channel, []byte) { got.Add(1) },
	})
	p.waitReady(b)
	return p, &got
}

// BenchmarkConnReliable1200 measures reliable throughput with 1200-byte
// messages, backing off while the channel is over its high-water mark.
func BenchmarkConnReliable1200(b *testing.B) {
	p, got := benchPair(b)
	defer p.close()
	msg := pattern(1, 1200)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	b.ResetTimer()
	waits := 0
	for i := 0; i < b.N; {
		err := p.a.Send(Reliable, msg)
		switch {
		case err == nil:
			i++
		case errors.Is(err, ErrBackpressure):
			waits++
			time.Sleep(50 * time.Microsecond)
		default:
			b.Fatal(err)
		}
	}
	waitFor(b, time.Minute, "delivery", func() bool { return got.Load() == int64(b.N) })
	b.StopTimer()
	b.ReportMetric(float64(waits)/float64(b.N), "backoffs/op")
}

// BenchmarkConnUnreliable measures unreliable throughput with 1200-byte
// datagrams, pacing on the send buffer so that the drop threshold is not hit.
// delivered/op below 1 is datagrams lost on loopback.
func BenchmarkConnUnreliable(b *testing.B) {
	p, got := benchPair(b)
	defer p.close()
	msg := pattern(1, 1200)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for p.a.Stats().Channels[Unreliable].Buffered > DefaultUnreliableDropThreshold/2 {
			time.Sleep(20 * time.Microsecond)
		}
		if err := p.a.Send(Unreliable, msg); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, time.Minute, "the send buffer to drain", func() bool {
		return p.a.Stats().Channels[Unreliable].Buffered == 0
	})
	b.StopTimer()
	s := p.a.Stats().Channels[Unreliable]
	b.ReportMetric(float64(got.Load())/float64(b.N), "delivered/op")
	b.ReportMetric(float64(s.Dropped)/float64(b.N), "dropped/op")
}

// BenchmarkConnectLoopback measures offer/answer, ICE, DTLS and SCTP up to
// both channels open, plus the close of both ends, with signaling through an
// in-process relay. The APIs (and a's shared UDP socket) are reused.
func BenchmarkConnectLoopback(b *testing.B) {
	apiA := mustAPI(b, Config{Logger: zerolog.Nop()})
	defer apiA.Close()
	apiB := mustAPI(b, Config{Logger: zerolog.Nop(), DisableUDPMux: true})
	defer apiB.Close()
	b.ReportAllocs()
	var ready time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		p := newPair(b, pairOpts{apiA: apiA, apiB: apiB})
		p.waitReady(b)
		ready += time.Since(start)
		p.close()
	}
	b.StopTimer()
	b.ReportMetric(float64(ready.Microseconds())/float64(b.N), "µs-to-ready/op")
}

// BenchmarkPipeReliable1200 is the in-memory baseline.
func BenchmarkPipeReliable1200(b *testing.B) {
	var got atomic.Int64
	a, _ := Pipe(PipeConfig{HandlerB: func(Channel, []byte) { got.Add(1) }})
	defer a.Close()
	msg := pattern(1, 1200)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		err := a.Send(Reliable, msg)
		switch {
		case err == nil:
			i++
		case errors.Is(err, ErrBackpressure):
			time.Sleep(10 * time.Microsecond)
		default:
			b.Fatal(err)
		}
	}
	waitFor(b, time.Minute, "delivery", func() bool { return got.Load() == int64(b.N) })
}
