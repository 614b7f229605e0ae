package durable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// A checkpoint over MaxCheckpoint is a refused write reported loudly (docs/security.md §8),
// never a silent end of durability: the room keeps its previous checkpoint, the refusal is
// counted and the room reported, the writer does not retry it (which held every other room's
// writes behind it), and the room's checkpoints resume once its world fits.

// TestCheckpointOverCapRefused runs the writer over the embedded JetStream.
func TestCheckpointOverCapRefused(t *testing.T) {
	s := openStore(t, t.TempDir())
	reg := prometheus.NewRegistry()
	w := NewWriter(s, WriterConfig{Registerer: reg})
	defer w.Close()
	written := func(n uint64) {
		t.Helper()
		poll.Until(t, 10*time.Second, "checkpoints written", func() error {
			if st := w.Stats(); st.Written < n {
				return fmt.Errorf("%d written, want %d (%+v)", st.Written, n, st)
			}
			return nil
		})
	}
	first := world(10).AppendState(nil)
	w.Submit(Checkpoint{Room: "r", Term: 1, Clock: 100, Data: first})
	written(1)

	w.Submit(Checkpoint{Room: "r", Term: 1, Clock: 200, Data: make([]byte, MaxCheckpoint+1)})
	if st := w.Stats(); st.Refused != 1 || st.Queued != 1 {
		t.Fatalf("stats %+v after an oversized checkpoint, want 1 refused, not queued", st)
	}
	if got := w.RefusedRooms(); got["r"] != "size" {
		t.Fatalf("RefusedRooms = %v, want r: size", got)
	}
	if got := gathered(t, reg, "concord_durable_checkpoint_refused_total"); got != "reason=size 1" {
		t.Fatalf("concord_durable_checkpoint_refused_total: %q", got)
	}
	if got := gathered(t, reg, "concord_durable_room_checkpoint_refused"); got != "reason=size,room=r 1" {
		t.Fatalf("concord_durable_room_checkpoint_refused: %q", got)
	}
	c, err := s.LoadCheckpoint(context.Background(), "r")
	if err != nil || c.Clock != 100 || len(c.Data) != len(first) {
		t.Fatalf("stored checkpoint clock %d, %d bytes (%v); want the previous one", c.Clock, len(c.Data), err)
	}

	// The world fits again: the next checkpoint is written and the room's report cleared.
	w.Submit(Checkpoint{Room: "r", Term: 1, Clock: 300, Data: first})
	written(2)
	if got := w.RefusedRooms(); len(got) != 0 {
		t.Fatalf("RefusedRooms = %v after a checkpoint was written", got)
	}
	if c, err = s.LoadCheckpoint(context.Background(), "r"); err != nil || c.Clock != 300 {
		t.Fatalf("stored checkpoint clock %d (%v), want 300", c.Clock, err)
	}
}

// bigSaver refuses the checkpoints of room "big" as the store does one over MaxCheckpoint, and
// saves the others.
type bigSaver struct{ flakySaver }

func (s *bigSaver) SaveCheckpoint(ctx context.Context, c Checkpoint) error {
	if c.Room == "big" {
		s.mu.Lock()
		s.tries++
		s.mu.Unlock()
		return fmt.Errorf("%w: room %q", ErrCheckpointTooLarge, c.Room)
	}
	return s.flakySaver.SaveCheckpoint(ctx, c)
}

// TestWriterDoesNotRetryRefused: a store's refusal for size is final, so the other rooms'
// checkpoints are written at once instead of waiting behind its retries.
func TestWriterDoesNotRetryRefused(t *testing.T) {
	bs := &bigSaver{flakySaver{saved: map[signaling.RoomID]signaling.Term{}}}
	w := NewWriter(bs, WriterConfig{})
	defer w.Close()
	w.Submit(Checkpoint{Room: "big", Term: 1})
	poll.Until(t, 5*time.Second, "the refusal", func() error {
		if w.Stats().Refused != 1 {
			return errors.New("not refused yet")
		}
		return nil
	})
	for i := range 5 {
		w.Submit(Checkpoint{Room: signaling.RoomID(fmt.Sprintf("r%d", i)), Term: 1})
	}
	// Well below retryMin: every room is written by the first drain, none waits for a retry round.
	poll.Until(t, retryMin/2, "the other rooms written", func() error {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		if len(bs.saved) != 5 {
			return fmt.Errorf("%d of 5 saved", len(bs.saved))
		}
		return nil
	})
	w.Close()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.tries != 6 {
		t.Fatalf("%d attempts, want 6: the refused checkpoint was tried again", bs.tries)
	}
}

// gathered returns the samples of metric name in reg as "label=value,… value" lines.
func gathered(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			lines = append(lines, fmt.Sprintf("%s %g", strings.Join(labels, ","), v))
		}
	}
	return strings.Join(lines, "\n")
}
