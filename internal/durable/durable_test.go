package durable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// world builds a replica of n arena boxes (a meta component and two 8-byte properties each) and
// a few other things: a deleted entity number, an append value, a tombstone.
func world(n int) *crdt.Replica {
	r := crdt.New(crdt.Config{})
	meta := schema.AppendMeta(nil, arena.SchemaBox, nil)
	val := make([]byte, 8)
	for i := range n {
		e := crdt.NewEntity(uint16(512+i), 0)
		ts := crdt.Timestamp(i%50 + 1)
		binary.LittleEndian.PutUint32(val, uint32(i))
		r.WriteAt(e, schema.ComponentMeta, ts, meta, false)
		r.WriteAt(e, 1200, ts, val, false)
		r.WriteAt(e, 1201, ts+1, val, false)
	}
	r.DeleteEntity(crdt.NewEntity(300, 2))
	m := crdt.Message{Type: crdt.AppendValue, Entity: crdt.NewEntity(512, 0), Component: 2000, Timestamp: 9, Data: []byte("chat")}
	r.Merge(&m)
	m = crdt.Message{Type: crdt.DeleteComponent, Entity: crdt.NewEntity(513, 0), Component: 1201, Timestamp: 99}
	r.Merge(&m)
	return r
}

// TestAppendNumbersIsTheState: the slices of a pass, concatenated, hold exactly the state.
func TestAppendNumbersIsTheState(t *testing.T) {
	r := world(3000)
	var stream []byte
	for lo := 0; lo < 1<<16; {
		stream, lo = AppendNumbers(stream, r, lo, 100)
	}
	got, err := Canonical("r", "test", stream)
	if err != nil {
		t.Fatal(err)
	}
	if want := r.AppendState(nil); !bytes.Equal(got, want) {
		t.Fatalf("the pass holds another state: %d canonical bytes, want %d", len(got), len(want))
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if _, err := s.LoadCheckpoint(context.Background(), "arena"); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("empty store: %v, want ErrNoCheckpoint", err)
	}
	r := world(10_000)
	data := r.AppendState(nil)
	c := Checkpoint{Room: "a/b c", Term: 7, Clock: r.Clock(), Data: data}
	if err := s.SaveCheckpoint(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	stale := c
	stale.Term, stale.Data = 6, data[:100]
	if err := s.SaveCheckpoint(context.Background(), stale); !errors.Is(err, ErrFenced) {
		t.Fatalf("a checkpoint of an earlier term: %v, want ErrFenced", err)
	}
	s.Close()
	s.Close() // idempotent

	s = openStore(t, dir) // as after a restart
	got, err := s.LoadCheckpoint(context.Background(), "a/b c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Term != 7 || got.Clock != r.Clock() || !bytes.Equal(got.Data, data) {
		t.Fatalf("loaded term %d clock %d, %d bytes; saved term 7 clock %d, %d bytes", got.Term, got.Clock, len(got.Data), r.Clock(), len(data))
	}
	if n, err := Validate(got.Room, s.Source(got.Room), got.Data); err != nil || n != 10_000 {
		t.Fatalf("Validate: %d entities, %v", n, err)
	}
	if _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second Open of one directory: %v, want in use", err)
	}
}

// TestCorruptCheckpoint: a truncated or damaged stream names the room, the source and the offset
// of the first bad message.
func TestCorruptCheckpoint(t *testing.T) {
	s := openStore(t, t.TempDir())
	data := world(100).AppendState(nil)
	cut := len(data) - 5
	bad := bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[12*1+0:], 3) // the second DELETE_ENTITY... or the first PUT: length 3
	for _, tc := range []struct {
		name string
		data []byte
		off  int
		want error
	}{
		{"truncated", data[:cut], lastMessageStart(t, data[:cut]), crdt.ErrTruncated},
		{"bad length", bad, 12, crdt.ErrBadLength},
	} {
		if err := s.SaveCheckpoint(context.Background(), Checkpoint{Room: "broken", Term: 1, Data: tc.data}); err != nil {
			t.Fatal(err)
		}
		c, err := s.LoadCheckpoint(context.Background(), "broken")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Validate(c.Room, s.Source(c.Room), c.Data)
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, tc.want) || ce.Offset != tc.off {
			t.Fatalf("%s: %v, want a CorruptError at offset %d wrapping %v", tc.name, err, tc.off, tc.want)
		}
		msg := err.Error()
		for _, part := range []string{`room "broken"`, CheckpointStream + " concord.checkpoint.broken", fmt.Sprintf("byte offset %d", tc.off)} {
			if !strings.Contains(msg, part) {
				t.Fatalf("%s: %q does not name %q", tc.name, msg, part)
			}
		}
	}
}

// lastMessageStart is the offset of the message a truncation cut.
func lastMessageStart(t *testing.T, b []byte) int {
	var rd crdt.Reader
	var m crdt.Message
	rd.Reset(b)
	for {
		off := rd.Offset()
		if err := rd.Next(&m); err != nil {
			var se *crdt.StreamError
			if !errors.As(err, &se) {
				t.Fatalf("no truncated message: %v", err)
			}
			return off
		}
	}
}

func TestRoomCounters(t *testing.T) {
	s := openStore(t, t.TempDir())
	if c, err := s.LoadRoom("r.1"); err != nil || c != (signaling.RoomCounters{}) {
		t.Fatalf("new room: %+v %v", c, err)
	}
	if err := s.SaveRoom("r.1", signaling.RoomCounters{LastIndex: 70, Term: 66}); err != nil {
		t.Fatal(err)
	}
	// A stale writer cannot lower the counters.
	if err := s.SaveRoom("r.1", signaling.RoomCounters{LastIndex: 65, Term: 80}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.LoadRoom("r.1"); err != nil || c != (signaling.RoomCounters{LastIndex: 70, Term: 80}) {
		t.Fatalf("loaded %+v %v, want 70/80", c, err)
	}
}

type slowSaver struct {
	entered, release chan struct{}
	saved            chan Checkpoint
}

func (s *slowSaver) SaveCheckpoint(_ context.Context, c Checkpoint) error {
	s.entered <- struct{}{}
	<-s.release
	s.saved <- c
	return nil
}

// TestWriterQueueBounded: with the store stuck, Submit does not block; a room's later checkpoint
// replaces its waiting one; past Queue waiting rooms the oldest waiting checkpoint is dropped;
// every drop is counted; Close writes what waits.
func TestWriterQueueBounded(t *testing.T) {
	ss := &slowSaver{entered: make(chan struct{}, 16), release: make(chan struct{}), saved: make(chan Checkpoint, 16)}
	w := NewWriter(ss, WriterConfig{Queue: 2})
	w.Submit(Checkpoint{Room: "r", Term: 0})
	<-ss.entered // the first is with the stuck store
	for i := 1; i < 4; i++ {
		w.Submit(Checkpoint{Room: "r", Term: signaling.Term(i)}) // r waits with term 3
	}
	w.Submit(Checkpoint{Room: "s", Term: 1}) // r, s wait
	w.Submit(Checkpoint{Room: "u", Term: 1}) // the queue holds 2 rooms: r's (the oldest) goes
	w.Submit(Checkpoint{Room: "s", Term: 2})
	if st := w.Stats(); st.Queued != 7 || st.Dropped != 4 {
		t.Fatalf("%+v, want 7 queued and 4 dropped", st)
	}
	close(ss.release)
	w.Close()
	w.Close()
	close(ss.saved)
	var got []string
	for c := range ss.saved {
		got = append(got, fmt.Sprintf("%s%d", c.Room, c.Term))
	}
	if want := []string{"r0", "s2", "u1"}; !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if st := w.Stats(); st.Written != 3 {
		t.Fatalf("%+v", st)
	}
}

// BenchmarkCheckpointSlice is the time a host loop spends on one tick of a checkpoint pass at
// 10,000 entities (DefaultSlice numbers); BenchmarkCheckpointWhole encodes all at once.
func BenchmarkCheckpointSlice(b *testing.B) {
	r := world(10_000)
	size := len(r.AppendState(nil))
	var buf []byte
	b.ReportAllocs()
	var times []time.Duration
	for b.Loop() {
		buf = buf[:0]
		for lo := 0; lo < 1<<16; {
			start := time.Now()
			buf, lo = AppendNumbers(buf, r, lo, DefaultSlice)
			times = append(times, time.Since(start))
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-slice-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-slice-µs")
	b.ReportMetric(float64(times[len(times)-1].Microseconds()), "max-slice-µs")
	b.ReportMetric(float64(len(times))/float64(b.N), "slices/pass")
	b.ReportMetric(float64(size), "checkpoint-bytes")
}

func BenchmarkCheckpointWhole(b *testing.B) {
	r := world(10_000)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendState(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "checkpoint-bytes")
}

// TestWriteScene10k writes a 10,000-box arena scene to $CONCORD_SCENE_OUT, for measuring a
// restore by hand (README "Durable rooms"); skipped without it.
func TestWriteScene10k(t *testing.T) {
	out := os.Getenv("CONCORD_SCENE_OUT")
	if out == "" {
		t.Skip("set CONCORD_SCENE_OUT=FILE to write the 10,000-entity scene")
	}
	if err := os.WriteFile(out, world(10_000).AppendState(nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStopsEverything: Close stops the embedded server, the connection and the writer:
// no goroutine of theirs is left.
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(s, WriterConfig{})
	w.Submit(Checkpoint{Room: "r", Term: 1, Data: world(10).AppendState(nil)})
	w.Close()
	if st := w.Stats(); st.Written != 1 {
		t.Fatalf("%+v: Close did not write what was queued", st)
	}
	s.Close()
	poll.Until(t, 10*time.Second, "goroutines gone", func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			return fmt.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// TestCheckpointConcurrentWriters: writers racing on one room each succeed (a revision conflict is
// re-read and retried) and the stored checkpoint is one of theirs, whole; a later term fences the
// earlier one out; a checkpoint over MaxCheckpoint is refused.
func TestCheckpointConcurrentWriters(t *testing.T) {
	s := openStore(t, t.TempDir())
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				data := bytes.Repeat([]byte{byte(w)}, 1000+i)
				errs <- s.SaveCheckpoint(context.Background(), Checkpoint{Room: "r", Term: 5, Data: data})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.LoadCheckpoint(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Data) < 1000 || !bytes.Equal(c.Data, bytes.Repeat(c.Data[:1], len(c.Data))) || c.Term != 5 {
		t.Fatalf("stored %d bytes of term %d, not one writer's checkpoint", len(c.Data), c.Term)
	}
	if err := s.SaveCheckpoint(context.Background(), Checkpoint{Room: "r", Term: 6, Data: []byte{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCheckpoint(context.Background(), Checkpoint{Room: "r", Term: 5, Data: c.Data}); !errors.Is(err, ErrFenced) {
		t.Fatalf("term 5 after term 6: %v, want ErrFenced", err)
	}
	if err := s.SaveCheckpoint(context.Background(), Checkpoint{Room: "big", Term: 1, Data: make([]byte, MaxCheckpoint+1)}); err == nil {
		t.Fatal("a checkpoint over MaxCheckpoint was written")
	}
}

// flakySaver fails every write while down is set (JetStream unavailable), then saves.
type flakySaver struct {
	mu    sync.Mutex
	down  bool
	saved map[signaling.RoomID]signaling.Term
	tries int
}

func (s *flakySaver) SaveCheckpoint(_ context.Context, c Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.down {
		return errors.New("nats: API error: code=503 err_code=10008 description=JetStream system temporarily unavailable")
	}
	if c.Term < s.saved[c.Room] {
		return ErrFenced
	}
	s.saved[c.Room] = c.Term
	return nil
}

// TestWriterRetries: a checkpoint whose write failed (JetStream unavailable) is written once the
// store answers again, unless a later one of its room replaced it; a fenced one is not retried.
func TestWriterRetries(t *testing.T) {
	fs := &flakySaver{down: true, saved: map[signaling.RoomID]signaling.Term{"fenced": 9}}
	w := NewWriter(fs, WriterConfig{})
	defer w.Close()
	w.Submit(Checkpoint{Room: "a", Term: 1})
	w.Submit(Checkpoint{Room: "b", Term: 1})
	w.Submit(Checkpoint{Room: "b", Term: 2}) // replaces b's first
	poll.Until(t, 10*time.Second, "the failed writes tried again", func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if fs.tries < 5 {
			return fmt.Errorf("%d tries", fs.tries)
		}
		fs.down = false
		return nil
	})
	w.Submit(Checkpoint{Room: "fenced", Term: 1})
	poll.Until(t, 10*time.Second, "both rooms' last checkpoints written", func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if fs.saved["a"] != 1 || fs.saved["b"] != 2 {
			return fmt.Errorf("saved %v", fs.saved)
		}
		return nil
	})
	fs.mu.Lock()
	tries := fs.tries
	fs.mu.Unlock()
	// Nothing is left to retry: a fenced checkpoint is dropped, not tried again.
	w.Close()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.tries > tries+1 || fs.saved["fenced"] != 9 {
		t.Fatalf("tries %d after %d, saved %v", fs.tries, tries, fs.saved)
	}
}

// TestWriterWaitsOutAFailingStore: while the store fails, checkpoints of many rooms cost one
// attempt per retry round, not one each (an attempt can take its whole timeout while a cluster
// elects a stream leader); once it answers, every room's last checkpoint is written.
func TestWriterWaitsOutAFailingStore(t *testing.T) {
	fs := &flakySaver{down: true, saved: map[signaling.RoomID]signaling.Term{}}
	w := NewWriter(fs, WriterConfig{})
	defer w.Close()
	const rooms = 20
	for i := range rooms {
		w.Submit(Checkpoint{Room: signaling.RoomID(fmt.Sprintf("r%02d", i)), Term: 1})
	}
	poll.Until(t, 10*time.Second, "three retry rounds", func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if fs.tries < 3 {
			return fmt.Errorf("%d tries", fs.tries)
		}
		if fs.tries > 6 {
			t.Fatalf("%d attempts for %d rooms while the store fails: each room was tried", fs.tries, rooms)
		}
		fs.down = false
		return nil
	})
	poll.Until(t, 10*time.Second, "every room's checkpoint written", func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if len(fs.saved) != rooms {
			return fmt.Errorf("%d of %d saved", len(fs.saved), rooms)
		}
		return nil
	})
}
