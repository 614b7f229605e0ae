package world_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/world"
)

// jumper is the tiles game with one more input, 9 | dx i32: the avatar moves dx at once, so
// that a benchmark crosses a border every tick it likes. It records when each input applied.
type jumper struct {
	*recorder
	mu  sync.Mutex
	log []appliedAt
}

type appliedAt struct {
	x  int
	at time.Time
}

func (j *jumper) Input(w *peer.World, r world.Region, e peer.Entity, data []byte) {
	j.mu.Lock()
	j.log = append(j.log, appliedAt{r.X, time.Now()})
	j.mu.Unlock()
	if len(data) == 5 && data[0] == 9 {
		b, _ := w.Get(e, tiles.PlayerPos)
		p, _ := world.ParseVec(b)
		p.X += int32(binary.LittleEndian.Uint32(data[1:]))
		_ = w.Set(e, tiles.PlayerPos, world.AppendVec(nil, p))
		return
	}
	j.recorder.Input(w, r, e, data)
}

func jump(dx int32) []byte { return binary.LittleEndian.AppendUint32([]byte{9}, uint32(dx)) }

// BenchmarkWorldHandover crosses a border once per iteration (a player jumping between regions
// (0,0) and (1,0) over pion on loopback) while the player sends an input every 2 ms, and reports
// the handover pause two ways: host (the source seeing the avatar out of bounds → the
// destination holding it) and input gap (the last input applied in the source → the first
// applied in the destination: what the player feels).
func BenchmarkWorldHandover(b *testing.B) {
	j := &jumper{recorder: newRecorder()}
	tw := startWorldApp(b, world.ServerConfig{}, j)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := tw.join(b, ctx, "jumper", [2]int{0, 0})
	waitResident(b, pl, 0, 0)
	for _, x := range []int{1} { // the destination loaded and followed before timing
		poll.Until(b, 20*time.Second, "neighbour followed", func() error {
			for _, r := range pl.Regions() {
				if r.X == x && r.Y == 0 {
					return nil
				}
			}
			return fmt.Errorf("following %v", pl.Regions())
		})
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the player's steady input
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = pl.Input(tiles.Walk(0, 0))
			}
		}
	}()
	b.ResetTimer()
	side := 0
	for range b.N {
		dx := int32(8000)
		if side == 1 {
			dx = -8000
		}
		if err := pl.Input(jump(dx)); err != nil {
			b.Fatal(err)
		}
		side = 1 - side
		poll.Until(b, 10*time.Second, "crossed", func() error {
			if r, _, _ := pl.Resident(); r.X != side {
				return fmt.Errorf("resident in %d", r.X)
			}
			return nil
		})
	}
	b.StopTimer()
	close(stop)
	<-done
	host := tw.srv.HandoverPauses()
	j.mu.Lock()
	var gaps []time.Duration
	for i := 1; i < len(j.log); i++ {
		if j.log[i].x != j.log[i-1].x {
			gaps = append(gaps, j.log[i].at.Sub(j.log[i-1].at))
		}
	}
	j.mu.Unlock()
	report(b, "host", host)
	report(b, "gap", gaps)
}

func report(b *testing.B, what string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), what+"-p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), what+"-p99-µs")
}
