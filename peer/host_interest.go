package peer

import (
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// Interest management (InterestPolicy, docs/protocol.md §5 "Interest"): the host sends each
// member the entities it follows and nothing else. hostMember.visible holds the entity numbers a
// member follows; nil means everything (no policy, or the member signaling would elect next,
// which keeps a whole replica so that a migration loses nothing). Everything the host sends a
// member passes through it: updates, commands, relayed CRDT messages, digests and snapshots.

// interest works out what each member follows (InterestPolicy) and moves members between
// interests: a Forget for what one stops following, a snapshot (through syncer) of what it
// starts to. It reads the members through members.
type interest struct {
	roleBase
	members *members
	syncer  *syncer
	// at is when the members' interest was last worked out; numbers is scratch for the
	// replica's entity numbers.
	at      time.Time
	numbers []uint16
}

// policy returns the host's interest policy (Config.Interest, else the app's), if it has one.
func (im *interest) policy() (InterestPolicy, bool) {
	if im.cfg.Interest != nil {
		return im.cfg.Interest, true
	}
	p, ok := im.app.(InterestPolicy)
	return p, ok
}

// follows reports whether member idx follows e: the room entity and what idx writes always, the
// rest as the policy says.
func (im *interest) follows(pol InterestPolicy, idx PeerIndex, e Entity) bool {
	if e == RoomEntity {
		return true
	}
	if in := im.w.ents[e]; in != nil && in.auth.Kind != authority.KindHost && in.auth.Peer == idx {
		return true
	}
	return pol.Interest(im.w, idx, e)
}

// farEvery paces what the successor follows beyond its own interest: those updates leave every
// farEvery-th flush (200 ms at 20 Hz, inside the digests' 300 ms quiet period), not every one.
// Its replica stays whole; what lags is at most the host's last 200 ms of writes no other member
// follows.
const farEvery = 4

// interestOf works out what member idx follows now: nil for everything. The successor follows
// everything, and near is its own interest, sent at the full rate (nil without a policy).
func (im *interest) interestOf(idx, successor PeerIndex) (vis, near map[uint16]bool) {
	pol, ok := im.policy()
	if !ok {
		return nil, nil
	}
	own := make(map[uint16]bool)
	for e := range im.w.ents {
		if im.follows(pol, idx, e) {
			own[e.Number()] = true
		}
	}
	if idx == successor {
		return nil, own
	}
	return own, nil
}

// sees reports whether member hm is sent entity number n.
func (hm *hostMember) sees(n uint16) bool { return hm.visible == nil || hm.visible[n] }

// keep is hm's interest as a snapshot and digest filter; nil for everything.
func (hm *hostMember) keep() func(uint16) bool {
	if hm.visible == nil {
		return nil
	}
	return func(n uint16) bool { return hm.visible[n] }
}

// updateInterest works out again, every InterestInterval, what each synced member follows, and
// tells each what changed.
func (im *interest) updateInterest() {
	if _, ok := im.policy(); !ok {
		return
	}
	now := im.env.now()
	if now.Sub(im.at) < im.cfg.InterestInterval {
		return
	}
	im.at = now
	succ := im.env.successor()
	for idx, hm := range im.members.mems {
		if hm.snapshotSent && hm.link.ready {
			vis, near := im.interestOf(idx, succ)
			hm.near = near
			im.refollow(hm, vis)
		}
	}
}

// refollow moves member hm to interest vis (nil: everything): a Forget for what it no longer
// follows, a snapshot of what it newly follows (like a late join: only those buckets).
func (im *interest) refollow(hm *hostMember, vis map[uint16]bool) {
	old := hm.visible
	hm.visible = vis
	if vis == nil {
		if old != nil {
			// It follows everything from now on (the successor): send it what it lacks.
			im.syncer.sendSnapshot(hm.link, hostsnapshot.All(hm.buckets), nil)
		}
		return
	}
	var gone []uint16
	if old == nil {
		im.numbers = im.w.r.Numbers(im.numbers[:0])
		for _, n := range im.numbers {
			if !vis[n] {
				gone = append(gone, n)
			}
		}
	} else {
		for n := range old {
			if !vis[n] {
				gone = append(gone, n)
			}
		}
	}
	im.forgetFor(hm, gone)
	if old == nil {
		return
	}
	var entered []int
	for n := range vis {
		if !old[n] {
			entered = append(entered, int(n))
		}
	}
	im.enter(hm, entered)
}

// enter sends member hm the state of the entity numbers it newly follows, with the rest of its
// interest in the same buckets (so that what it holds there is not taken for a difference).
func (im *interest) enter(hm *hostMember, numbers []int) {
	if len(numbers) == 0 {
		return
	}
	count := hm.buckets
	if count == 0 {
		count = im.cfg.Buckets
	}
	buckets := make([]int, len(numbers))
	for i, n := range numbers {
		buckets[i] = n % count
	}
	im.syncer.sendSnapshot(hm.link, hostsnapshot.Only(count, buckets...), hm.keep())
}

// forgetFor tells member hm to drop entity numbers it no longer follows.
func (im *interest) forgetFor(hm *hostMember, numbers []uint16) {
	if len(numbers) == 0 {
		return
	}
	ids := make([]uint64, 0, len(numbers))
	for _, n := range numbers {
		e, ok := im.w.byNumber.get(n)
		if !ok {
			v, _ := im.w.r.DeletedVersion(n)
			e = crdt.NewEntity(n, v)
		}
		ids = append(ids, uint64(e))
		delete(hm.dirty, e)
		if hm.delta != nil {
			hm.delta.forget(n)
		}
	}
	im.env.send(hm.link, link.Reliable, netmsg.AppendForget(nil, &netmsg.Forget{NetworkIDs: ids}))
}

// forgetOutside tells a member that answered its sync snapshot to drop whatever it may hold
// outside its interest: a survivor of a migration holds what an earlier host sent it.
func (im *interest) forgetOutside(hm *hostMember) {
	if hm.visible == nil || hm.heldTerm == 0 {
		return // it holds everything it should, or nothing at all
	}
	var gone []uint16
	im.numbers = im.w.r.Numbers(im.numbers[:0])
	for _, n := range im.numbers {
		if !hm.visible[n] {
			gone = append(gone, n)
		}
	}
	im.forgetFor(hm, gone)
}

// widen adds to hm's interest the entities this step spawned (spawns) that it follows, and those it now
// writes (a grant or lock moved to it): a spawn carries the whole entity, an entity it did not
// follow before arrives in a snapshot after the commands.
func (im *interest) widen(hm *hostMember, pol InterestPolicy, spawns []Entity, transfers []netmsg.AuthorityTransfer) (entered []int) {
	idx := hm.link.idx
	for _, e := range spawns {
		if im.follows(pol, idx, e) {
			hm.visible[e.Number()] = true
		}
	}
	for _, t := range transfers {
		e := Entity(t.NetworkID)
		if n := e.Number(); PeerIndex(t.NewAuthorIndex) == idx && !hm.visible[n] {
			hm.visible[n] = true
			entered = append(entered, int(n))
		}
	}
	return entered
}

// filterRelay appends to dst the CRDT messages of stream whose entity hm follows.
func filterRelay(dst, stream []byte, hm *hostMember) []byte {
	var rd crdt.Reader
	var m crdt.Message
	for rd.Reset(stream); rd.Next(&m) == nil; {
		if hm.sees(m.Entity.Number()) {
			dst = crdt.AppendMessage(dst, &m)
		}
	}
	return dst
}
