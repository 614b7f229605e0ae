package authority

import (
	"fmt"
	"slices"
)

// CheckInvariants reports the first inconsistency between t's records and its
// lock holders, for the property tests.
func (t *Table) CheckInvariants() error {
	locks := 0
	for e, r := range t.records {
		switch r.Kind {
		case KindAvatar:
		case KindLock:
			locks++
			h := t.holders[r.Peer]
			if h == nil || !slices.Contains(h.locks, e) {
				return fmt.Errorf("entity %d locked by %d, who does not list it", e, r.Peer)
			}
			if r.Peer == t.host {
				return fmt.Errorf("entity %d locked by the host %d", e, r.Peer)
			}
		default:
			return fmt.Errorf("entity %d has a stored %v record", e, r.Kind)
		}
		if reserved(e) {
			return fmt.Errorf("reserved entity %d has record %+v", e, r)
		}
	}
	held := 0
	for p, h := range t.holders {
		if len(h.locks) == 0 {
			return fmt.Errorf("holder %d holds nothing", p)
		}
		if len(h.locks) > t.cfg.MaxLocksPerPeer {
			return fmt.Errorf("holder %d holds %d locks", p, len(h.locks))
		}
		for _, e := range h.locks {
			if r := t.records[e]; r != (Record{Kind: KindLock, Peer: p}) {
				return fmt.Errorf("holder %d lists entity %d whose record is %+v", p, e, r)
			}
		}
		held += len(h.locks)
	}
	if held != locks {
		return fmt.Errorf("%d lock records but holders list %d", locks, held)
	}
	return nil
}
