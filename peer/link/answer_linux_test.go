package link

import (
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// BenchmarkAnswerOffer measures what a dedicated host's loop does for each member that joins:
// an answerer made and the member's offer answered (HandleSignal: pion's CreateAnswer, with its
// ICE agent, and SetLocalDescription). µs-on-loop/op is that call's wall time; cpu-µs/op the
// process's CPU per answer, gathering and close included (a figure the machine's load moves
// less). One offer, made once, is answered every time.
func BenchmarkAnswerOffer(b *testing.B) {
	api := mustAPI(b, Config{Logger: zerolog.Nop()})
	defer api.Close()
	offers := make(chan Signal, 64)
	off, err := api.NewOfferer(ConnConfig{Signal: queueTo(offers)})
	if err != nil {
		b.Fatal(err)
	}
	defer off.Close()
	var offer Signal
	for offer.Kind != SignalOffer {
		offer = <-offers
	}
	discard := func(Signal) error { return nil }
	var onLoop time.Duration
	cpu0 := processCPU(b)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		ans, err := api.NewAnswerer(ConnConfig{Signal: discard})
		if err != nil {
			b.Fatal(err)
		}
		if err := ans.HandleSignal(offer); err != nil {
			b.Fatal(err)
		}
		onLoop += time.Since(start)
		_ = ans.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(onLoop.Microseconds())/float64(b.N), "µs-on-loop/op")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is this process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
