package peer

import (
	"errors"
	"io"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// Checkpoint returns the whole replica as a canonical ADR-117 message stream (the bytes of a
// main.crdt file, crdt.Replica.AppendState) and the Lamport clock, which is at least every
// timestamp in it. It runs on the peer's loop (or after Run returned) and costs a walk of the
// whole state; internal/durable spreads its periodic checkpoints over ticks instead.
func (w *World) Checkpoint() ([]byte, crdt.Timestamp) {
	return w.r.AppendState(nil), w.r.Clock()
}

// MergeCheckpoint merges an ADR-117 message stream (a checkpoint, a main.crdt scene) into the
// world as if a peer had sent it: the index, the events and, on a host, the traffic to members
// follow. The caller validates the stream first (crdt.Replica.MergeStream into a scratch
// replica): a malformed message stops the merge with a *crdt.StreamError at its offset and the
// messages before it stay merged.
func (w *World) MergeCheckpoint(stream []byte) error {
	var rd crdt.Reader
	var m crdt.Message
	rd.Reset(stream)
	for {
		if err := rd.Next(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		w.mergeRemote(&m, 0)
	}
	w.closeBatch()
	w.resumeAllocation()
	// What a checkpoint holds is its host's, not this host's spawns: a member's deletion of one
	// is no reason to move it (host_supersede.go).
	if w.restored == nil {
		w.restored = make(map[Entity]bool, len(w.ents))
	}
	for e := range w.ents {
		w.restored[e] = true
	}
	if h, ok := w.sink.(*hostRole); ok {
		// The host's authority table was built before the merge: adopt the merged records
		// (avatars and locks of members), as hostRole.start does for the replica it starts from.
		now := h.env.now()
		for e, in := range w.ents {
			if in.auth.Kind != authority.KindHost {
				_ = h.auth.Restore(e, in.auth, now)
			}
		}
	}
	return nil
}

// resumeAllocation moves the allocator, after a checkpoint was merged, half the number space past
// the number of the last entity the checkpoint's host spawned (the live entity whose meta is
// stamped latest). The host that wrote the checkpoint went on allocating after it, from about
// there, before it stopped or died; members that lived through it hold those entities (live or
// deleted) and this host, which knows nothing of them, would allocate the same (number, version)
// pairs in the same order: a member holding one live takes this host's spawn as a write to its
// entity (the old one lost), one holding it deleted never takes it (docs/protocol.md §5
// "Superseded numbers"). Half the number space away, this host's spawns meet the dead host's only
// if that host spawned tens of thousands of entities after its last checkpoint; what collides
// anyway is healed by supersede (host_supersede.go).
func (w *World) resumeAllocation() {
	var last Entity
	var lastTS crdt.Timestamp
	found := false
	for e := range w.ents {
		if _, ts, ok, deleted := w.r.Get(e, schema.ComponentMeta); ok && !deleted && (!found || ts > lastTS || ts == lastTS && e > last) {
			last, lastTS, found = e, ts, true
		}
	}
	if !found || last.Number() < FirstSpawnNumber {
		return
	}
	const span = 1<<16 - FirstSpawnNumber
	w.next = FirstSpawnNumber + uint16((int(last.Number())-FirstSpawnNumber+1+span/2)%span)
}
