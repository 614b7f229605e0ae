package link

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
)

// recorder records the sequence numbers a pipe end receives, per channel.
type recorder struct {
	mu  sync.Mutex // guards got
	got [NumChannels][]uint32
}

func (r *recorder) handle(ch Channel, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[ch] = append(r.got[ch], binary.LittleEndian.Uint32(p))
}

func (r *recorder) seqs(ch Channel) []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[ch])
}

func TestPipeReliableIsOrderedAndLossless(t *testing.T) {
	defer test.CheckRoutines(t)()
	var ra, rb recorder
	a, b := Pipe(PipeConfig{HandlerA: ra.handle, HandlerB: rb.handle, Loss: 0.5, Reorder: 0.5, Seed: 3})
	defer a.Close()
	const n = 2000
	for i := range uint32(n) {
		if err := a.Send(Reliable, pattern(i, 100)); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(Reliable, pattern(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "delivery", func() bool {
		return len(rb.seqs(Reliable)) == n && len(ra.seqs(Reliable)) == n
	})
	for _, got := range [][]uint32{ra.seqs(Reliable), rb.seqs(Reliable)} {
		for i, seq := range got {
			if seq != uint32(i) {
				t.Fatalf("message %d carries seq %d", i, seq)
			}
		}
	}
	if s := a.Stats().Channels[Reliable]; s.MessagesSent != n || s.BytesSent != n*100 || s.Lost != 0 {
		t.Fatalf("sender stats %+v", s)
	}
	if s := b.Stats().Channels[Reliable]; s.MessagesReceived != n || s.BytesReceived != n*100 {
		t.Fatalf("receiver stats %+v", s)
	}
}

// runLossyPipe sends n unreliable datagrams a→b and returns what b received,
// in order, once everything is delivered.
func runLossyPipe(t *testing.T, seed uint64, n int) (got []uint32, stats ChannelStats) {
	t.Helper()
	var rb recorder
	a, _ := Pipe(PipeConfig{HandlerB: rb.handle, Loss: 0.3, Reorder: 0.2, Seed: seed, UnreliableDropThreshold: 1 << 30})
	defer a.Close()
	for i := range uint32(n) {
		if err := a.Send(Unreliable, pattern(i, 32)); err != nil {
			t.Fatal(err)
		}
	}
	// A reliable message releases a datagram held back for reordering.
	if err := a.Send(Reliable, pattern(0, 4)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "delivery", func() bool {
		return len(rb.seqs(Reliable)) == 1 && a.Stats().Channels[Unreliable].Buffered == 0
	})
	return rb.seqs(Unreliable), a.Stats().Channels[Unreliable]
}

func TestPipeDeterministicLoss(t *testing.T) {
	defer test.CheckRoutines(t)()
	const n = 2000
	got1, s1 := runLossyPipe(t, 42, n)
	got2, _ := runLossyPipe(t, 42, n)
	other, _ := runLossyPipe(t, 43, n)

	if !slices.Equal(got1, got2) {
		t.Fatal("the same seed delivered different datagrams or orders")
	}
	if slices.Equal(got1, other) {
		t.Fatal("different seeds delivered the same datagrams")
	}
	if s1.Lost+uint64(len(got1)) != n || s1.MessagesSent != n || s1.Dropped != 0 {
		t.Fatalf("lost %d + delivered %d != %d (stats %+v)", s1.Lost, len(got1), n, s1)
	}
	if rate := float64(s1.Lost) / n; math.Abs(rate-0.3) > 0.05 {
		t.Fatalf("loss rate %.3f, configured 0.3", rate)
	}
	inversions := 0
	for i := 1; i < len(got1); i++ {
		if got1[i] < got1[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatal("Reorder 0.2 reordered nothing")
	}
}

func TestPipeProbabilityClamp(t *testing.T) {
	defer test.CheckRoutines(t)()
	for _, tc := range []struct {
		name string
		loss float64
		want int // datagrams delivered out of 100
	}{
		{"NaN is zero", math.NaN(), 100},
		{"negative is zero", -1, 100},
		{"over one is one", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rb recorder
			a, b := Pipe(PipeConfig{HandlerB: rb.handle, Loss: tc.loss})
			defer b.Close()
			for i := range uint32(100) {
				_ = a.Send(Unreliable, pattern(i, 8))
			}
			_ = a.Send(Reliable, pattern(0, 8))
			waitFor(t, 5*time.Second, "delivery", func() bool { return len(rb.seqs(Reliable)) == 1 })
			if got := len(rb.seqs(Unreliable)); got != tc.want {
				t.Fatalf("delivered %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPipeBackpressure(t *testing.T) {
	defer test.CheckRoutines(t)()
	h := &blockingHandler{release: make(chan struct{})}
	a, _ := Pipe(PipeConfig{HandlerB: h.handle})
	defer a.Close()
	defer h.open()
	msg := pattern(1, 1200)
	const tries = 5000
	for range tries {
		if err := a.Send(Unreliable, msg); err != nil {
			t.Fatal(err)
		}
	}
	s := a.Stats().Channels[Unreliable]
	if s.Dropped == 0 || s.MessagesSent+s.Dropped != tries || s.Buffered > DefaultUnreliableDropThreshold+1200 {
		t.Fatalf("unreliable stats %+v", s)
	}
	var err error
	sent := 0
	for ; sent < tries && err == nil; sent++ {
		err = a.Send(Reliable, msg)
	}
	var bp *BackpressureError
	if !errors.As(err, &bp) || !errors.Is(err, ErrBackpressure) || bp.Limit != DefaultReliableHighWater {
		t.Fatalf("after %d reliable sends: %v", sent, err)
	}
	if s := a.Stats().Channels[Reliable]; s.Backpressured != 1 {
		t.Fatalf("reliable stats %+v", s)
	}
}

func TestPipeClose(t *testing.T) {
	defer test.CheckRoutines(t)()
	a, b := Pipe(PipeConfig{})
	for range 3 {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []Link{a, b} {
		select {
		case <-l.Done():
		default:
			t.Fatal("Done not closed")
		}
		if err := l.Send(Reliable, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Send after close = %v, want ErrClosed", err)
		}
	}
	if err := b.(*pipeEnd).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closing end Err = %v", err)
	}
	if err := a.(*pipeEnd).Err(); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("other end Err = %v, want ErrPeerClosed", err)
	}
	_ = a.Close()
}

func TestPipeSendErrors(t *testing.T) {
	defer test.CheckRoutines(t)()
	a, _ := Pipe(PipeConfig{})
	defer a.Close()
	if err := a.Send(Channel(9), nil); !errors.Is(err, ErrBadChannel) {
		t.Fatalf("bad channel: %v", err)
	}
	if err := a.Send(Unreliable, make([]byte, MaxUnreliableMessage+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
}

func TestPipeSendDoesNotAllocate(t *testing.T) {
	defer test.CheckRoutines(t)()
	delivered := make(chan struct{}, 1)
	a, _ := Pipe(PipeConfig{HandlerB: func(Channel, []byte) { delivered <- struct{}{} }})
	defer a.Close()
	msg := pattern(5, 1200)
	round := func() {
		if err := a.Send(Unreliable, msg); err != nil {
			t.Fatal(err)
		}
		<-delivered
	}
	for range 10 {
		round() // Warm the buffer free list and the ring.
	}
	if allocs := testing.AllocsPerRun(200, round); allocs != 0 {
		t.Fatalf("steady-state Send+deliver allocates %v times", allocs)
	}
}
