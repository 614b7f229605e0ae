package durable

import (
	"errors"
	"fmt"
	"io"

	"github.com/concordrtc/concord/crdt"
)

// ErrNotRestored: a world does not hold a checkpoint it should descend from.
var ErrNotRestored = errors.New("durable: the world does not hold the room's checkpoint")

// Descends reports (nil) whether replica r holds every LWW entry and deletion of the ADR-117
// stream seed at least as new: each deleted entity deleted in r, each entry present in r with a
// timestamp at least the seed's (or its entity deleted). That is so for any world that restored
// seed and played on, and not for a world started afresh beside it. Append values are not
// compared (sets only grow). The error names the first entry r lacks.
func Descends(r *crdt.Replica, seed []byte) error {
	var rd crdt.Reader
	var m crdt.Message
	rd.Reset(seed)
	for {
		if err := rd.Next(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch m.Type {
		case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
			if !r.EntityDeleted(m.Entity) {
				return fmt.Errorf("%w: entity %d is not deleted", ErrNotRestored, m.Entity)
			}
		case crdt.PutComponent, crdt.PutComponentNetwork, crdt.DeleteComponent, crdt.DeleteComponentNetwork:
			if r.EntityDeleted(m.Entity) {
				continue
			}
			if _, ts, ok, _ := r.Get(m.Entity, m.Component); !ok || ts < m.Timestamp {
				return fmt.Errorf("%w: entity %d component %d at %d (the world: %d)", ErrNotRestored, m.Entity, m.Component, m.Timestamp, ts)
			}
		}
	}
}
