package authority_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/concordrtc/concord/authority"
)

// world is a Table next to a model of it built only from what the Table's
// results say: author[e] is e's author as the returned Transfers and avatars
// describe it, absent meaning the host.
type world struct {
	t      *testing.T
	tb     *authority.Table
	author map[EntityID]PeerIndex
	now    time.Time
}

var (
	propPeers    = []PeerIndex{1, 2, 3, 4, 5, 6}
	propEntities = []EntityID{0, 3, 2<<16 | 5, 600, 601, 602, 603, 604, 605, 606, 607, 1<<16 | 608, 609, 610, 611}
	propConfig   = authority.Config{LockTimeout: time.Second, MaxLocksPerPeer: 3}
)

func (w *world) modelAuthor(e EntityID) PeerIndex {
	if p, ok := w.author[e]; ok {
		return p
	}
	return w.tb.Host()
}

// moved applies a Transfer to the model after checking that it starts from
// the author the model knows. An avatar stays recorded even when the host owns
// it, because it stays with the old host across a migration.
func (w *world) moved(op string, tr authority.Transfer, avatar bool) {
	w.t.Helper()
	if from := w.modelAuthor(tr.Entity); tr.From != from {
		w.t.Fatalf("%s: transfer %+v, but the author was %d", op, tr, from)
	}
	if tr.To == w.tb.Host() && !avatar {
		delete(w.author, tr.Entity)
	} else {
		w.author[tr.Entity] = tr.To
	}
}

// check asserts that every entity has exactly one writer, the one the model
// says, and that corrections not vouched for as relayed admit the same peer.
func (w *world) check(op string) {
	w.t.Helper()
	if err := w.tb.CheckInvariants(); err != nil {
		w.t.Fatalf("after %s: %v", op, err)
	}
	for _, e := range propEntities {
		want := w.modelAuthor(e)
		if got := w.tb.Author(e); got != want {
			w.t.Fatalf("after %s: Author(%d) = %d, model says %d", op, e, got, want)
		}
		for _, p := range append(propPeers, 0, 7) {
			write := w.tb.AdmitWrite(p, e) == nil
			correct := w.tb.AdmitCorrection(p, e, false) == nil
			if write != (p == want) || correct != (p == want) {
				w.t.Fatalf("after %s: peer %d on entity %d (author %d): write %v, correction %v",
					op, p, e, want, write, correct)
			}
		}
	}
}

func TestPropertyOneWriter(t *testing.T) {
	const sequences, steps = 150, 300
	for seed := range uint64(sequences) {
		rng := rand.New(rand.NewPCG(seed, 0xC0DC0D))
		w := &world{t: t, tb: authority.New(1, propConfig), author: map[EntityID]PeerIndex{}, now: t0}
		for step := range steps {
			w.now = w.now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
			p := propPeers[rng.IntN(len(propPeers))]
			e := propEntities[rng.IntN(len(propEntities))]
			op := ""
			switch rng.IntN(10) {
			case 0:
				op = fmt.Sprintf("SetAvatar(%d, %d)", e, p)
				if tr, err := w.tb.SetAvatar(e, p); err == nil {
					w.moved(op, tr, true)
				}
			case 1, 2:
				op = fmt.Sprintf("RequestLock(%d, %d)", p, e)
				if tr, err := w.tb.RequestLock(p, e, w.now); err == nil {
					w.moved(op, tr, false)
				}
			case 3:
				op = fmt.Sprintf("Relinquish(%d, %d)", p, e)
				if tr, err := w.tb.Relinquish(p, e); err == nil {
					w.moved(op, tr, false)
				}
			case 4, 5:
				op = fmt.Sprintf("Touch(%d)", p)
				w.tb.Touch(p, w.now)
			case 6:
				op = "Expire"
				for _, tr := range w.tb.Expire(w.now) {
					w.moved(op, tr, false)
				}
			case 7:
				op = fmt.Sprintf("Leave(%d)", p)
				w.leave(op, p)
			case 8:
				op = fmt.Sprintf("Despawn(%d)", e)
				w.tb.Despawn(e)
				delete(w.author, e)
			case 9:
				if p == w.tb.Host() {
					continue
				}
				op = fmt.Sprintf("Migrate(%d→%d)", w.tb.Host(), p)
				w.migrate(op, p)
			}
			w.check(fmt.Sprintf("seed %d step %d %s", seed, step, op))
		}
	}
}

func (w *world) leave(op string, p PeerIndex) {
	w.t.Helper()
	avatars, released := w.tb.Leave(p)
	for _, e := range avatars {
		if a := w.modelAuthor(e); a != p {
			w.t.Fatalf("%s: returned avatar %d of %d", op, e, a)
		}
		delete(w.author, e)
	}
	for _, tr := range released {
		w.moved(op, tr, false)
	}
	if p == w.tb.Host() {
		return
	}
	for e, a := range w.author {
		if a == p {
			w.t.Fatalf("%s: %d still authors %d", op, p, e)
		}
	}
}

// migrate rebuilds the table on a new host from the encoded records, as a
// host migration does, then lets the old host leave. The new host's own locks
// become host ownership: the author stays the same.
func (w *world) migrate(op string, newHost PeerIndex) {
	w.t.Helper()
	old := w.tb
	w.tb = authority.New(newHost, propConfig)
	var buf []byte
	for e, r := range old.All() {
		buf = authority.AppendRecord(buf[:0], r)
		var got authority.Record
		if _, err := authority.ConsumeRecord(buf, &got); err != nil {
			w.t.Fatalf("%s: %v", op, err)
		}
		if err := w.tb.Restore(e, got, w.now); err != nil {
			w.t.Fatalf("%s: %v", op, err)
		}
	}
	for e, a := range w.author {
		if a == newHost && old.Record(e).Kind == authority.KindLock {
			delete(w.author, e) // a host entity now, not a lock
		}
	}
	w.leave(op, old.Host())
}
