package peer

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// Syncing members: digests in, snapshots out, corrections back (docs/protocol.md §5, "joining").

// syncer keeps members' replicas equal to the host's: it compares their bucket digests with its
// own (differ, computed once per change of the replica for every member that follows
// everything), sends the snapshots that repair them (sendSnapshot), and keeps when each bucket
// last changed here (touch), so that anti-entropy leaves alone what is still on its way.
type syncer struct {
	roleBase
	// changed is, per bucket, when it last changed here.
	changed []time.Time
	snap    netmsg.HostSnapshot
	own     []uint64
	part    []uint64 // one member's digests when it follows part of the world
	ownAt   uint64   // Replica.Changes() when own was computed
	out     []byte
	// cache keeps the whole-world snapshot's pages encoded from one join to the next: a joiner's
	// snapshot re-encodes only the pages that changed since the last one.
	cache hostsnapshot.Cache
}

// answerDigest compares a member's bucket digests with the host's. The first digest of a link
// gets the HostSnapshot that syncs the member: the buckets that differ, so a member that already
// holds the world (after a migration) receives only what differs. Later digests repair buckets
// that differ and have been quiet here for QuietPeriod (anti-entropy for lost datagrams).
func (h *hostRole) answerDigest(hm *hostMember, dig *netmsg.Digest) {
	w := h.w
	n := len(dig.Digests)
	first := !hm.snapshotSent
	if first {
		// Relayed corrections only from a member that held an earlier host's state, as
		// signaling recorded it: a fresh joiner (term 0), one of this term, or one whose
		// greeting claims what signaling never saw has nothing of a previous host to relay.
		hm.acceptRelayed = h.survivorWindow(hm)
		// A survivor's avatar waits for its answer, which may bring back the one an earlier
		// host gave it (windowAvatarOK); until then it follows what it would without one.
		hm.avatarAfterAnswer = hm.acceptRelayed && hm.info.Kind != string(sigclient.KindHost)
		if _, ok := h.policy(); ok && !hm.avatarAfterAnswer {
			h.ensureAvatar(hm) // where its avatar stands decides what it follows
		}
		hm.visible, hm.near = h.interestOf(hm.link.idx, h.env.successor())
	}
	now := h.env.now()
	differ := h.differ(hm, dig, now)
	if !first && len(differ) == 0 {
		return
	}
	h.sendSnapshot(hm.link, hostsnapshot.Only(n, differ...), hm.keep())
	hm.snapClock, hm.snapAt = w.r.Clock(), now
	hm.answering = true
	if first {
		hm.snapshotSent = true
		hm.dirty = make(map[Entity]uint32)
		h.entered = append(h.entered, netmsg.PeerInfo{PeerIndex: uint64(hm.link.idx), PeerID: wirePeerID(hm.info.ID)})
		if !hm.avatarAfterAnswer {
			h.ensureAvatar(hm)
		}
		h.log.Info().Uint64("peer", uint64(hm.link.idx)).Int("buckets", len(differ)).Msg("member synced by snapshot")
	}
}

// differ returns the buckets in which member hm's digests differ from the host's (of what hm
// follows). After hm's sync snapshot, a bucket counts only once it has been quiet here for
// QuietPeriod: a recent write may still be on its way to hm.
func (s *syncer) differ(hm *hostMember, dig *netmsg.Digest, now time.Time) []int {
	w := s.w
	n := len(dig.Digests)
	own := s.own
	if hm.visible != nil {
		// A member that follows part of the world holds that part only: compare with its digests.
		s.part = w.r.BucketDigestsOf(n, hm.keep(), s.part[:0])
		own = s.part
	} else if s.ownAt != w.r.Changes() || len(s.own) != n {
		// Between two changes of the replica every member's digest is compared with one computation.
		s.own = w.r.BucketDigests(n, s.own[:0])
		s.ownAt = w.r.Changes()
		own = s.own
	}
	var differ []int
	for b := range n {
		if own[b] == dig.Digests[b] {
			continue
		}
		if hm.snapshotSent && n == len(s.changed) && now.Sub(s.changed[b]) < s.cfg.QuietPeriod {
			continue
		}
		differ = append(differ, b)
	}
	return differ
}

// touch notes that e changed now, for the quiet period of its bucket.
func (s *syncer) touch(e Entity) {
	if n := len(s.changed); n > 0 {
		s.changed[int(e.Number())%n] = s.env.stepNow()
	}
}

// staleDigest reports whether a member's digest was computed before the last snapshot this host
// sent it arrived: its clock is below the snapshot's, and applying a snapshot raises the member's
// clock to the snapshot's (the host's). Such a digest says nothing about what the snapshot
// repaired; answering it would queue the same buckets again behind the snapshot still on its way.
// Under a burst of joins, where a snapshot takes seconds to arrive, that was a full snapshot a
// second per member (a member re-greets after a second without news), five times the bytes of the
// sync snapshots. The rule holds for maxSnapshotWait after a snapshot: a member that refused the
// snapshot (snapshotBounds) is answered again after that.
//
// A snapshot also counts as on its way while the link holds reliable data the member has not
// acknowledged yet (the snapshot, or what was queued behind it): a digest stamped above the
// snapshot's clock may owe that only to updates that overtook it on the unreliable channel.
func (s *syncer) staleDigest(hm *hostMember, dig *netmsg.Digest) bool {
	if s.env.now().Sub(hm.snapAt) >= maxSnapshotWait {
		return false
	}
	if crdt.Timestamp(dig.Clock) < hm.snapClock {
		return true
	}
	return len(hm.link.backlog) > 0 || hm.link.l != nil && hm.link.l.Stats().Channels[link.Reliable].Buffered > 0
}

// maxSnapshotWait bounds how long a host ignores a member's digests computed before its last
// snapshot arrived.
const maxSnapshotWait = 10 * time.Second

// settleAvatar ends a survivor's wait for its avatar (avatarAfterAnswer) once its answer to the
// sync snapshot is merged, or its window closed without one: it keeps the avatar its answer
// brought back, or gets a fresh one, and what it follows is worked out again from there.
func (h *hostRole) settleAvatar(hm *hostMember) {
	if !hm.avatarAfterAnswer {
		return
	}
	hm.avatarAfterAnswer = false
	h.ensureAvatar(hm)
	if _, ok := h.policy(); ok {
		hm.visible, hm.near = h.interestOf(hm.link.idx, h.env.successor())
	}
}

// ensureAvatar spawns the avatar of a member that has none (a dedicated host gets none).
func (h *hostRole) ensureAvatar(hm *hostMember) {
	if hm.info.Kind != string(sigclient.KindHost) {
		if _, ok := h.w.AvatarOf(hm.link.idx); !ok {
			h.spawnAvatar(hm.info)
		}
	}
}

// sendSnapshot sends r a HostSnapshot of the covered buckets, narrowed by keep (nil: everything).
func (s *syncer) sendSnapshot(r *remote, cover hostsnapshot.Cover, keep func(uint16) bool) {
	w := s.w
	roster := s.env.roster()
	peers := make([]netmsg.PeerInfo, 0, len(roster))
	for _, m := range roster {
		peers = append(peers, netmsg.PeerInfo{PeerIndex: uint64(m.Index), PeerID: wirePeerID(string(m.ID))})
	}
	hostsnapshot.Build(&s.snap, w.r, w.schemas, hostsnapshot.Options{
		Term: uint64(w.term), LocalPeerIndex: uint64(r.idx), HostPeerIndex: uint64(w.self), Peers: peers, Cover: cover, Keep: keep, Cache: &s.cache,
	})
	s.out = netmsg.AppendHostSnapshot(s.out[:0], &s.snap)
	s.env.send(r, link.Reliable, s.out)
}

// corrections merges a member's CRDT corrections that authority and the limits allow. In the
// member's first batch after its sync snapshot, corrections to host entities are admitted too
// when the member held an earlier host's state (its greeting's term is below this host's): they
// are values the member received from the previous host that this host missed (migration).
func (h *hostRole) corrections(hm *hostMember, b *netmsg.CrdtBatch) error {
	if Term(b.Term) != h.w.term {
		h.count.fenced.Add(1)
		return nil
	}
	idx := hm.link.idx
	relayed := hm.acceptRelayed
	hm.acceptRelayed = false
	// A batch that answers a snapshot carries back what the member holds that the snapshot
	// lacked, deletions included; only there may a deletion supersede a number (a member never
	// deletes an entity of its own accord).
	answering := hm.answering || relayed
	hm.answering = false
	if !hm.answered {
		// Its answer to the sync snapshot: merged below, then it drops what it holds outside its
		// interest (deferred: the merge may deliver what it is told to forget), which its
		// avatar, brought back by the answer or fresh, decides (deferred after: runs first).
		defer h.forgetOutside(hm)
		defer h.settleAvatar(hm)
	}
	hm.answered = true
	if len(b.Messages) > maxCorrectionBytes {
		return h.refuse(hm, RefusedBatch, fmt.Sprintf("corrections of %d bytes, more than %d", len(b.Messages), maxCorrectionBytes))
	}
	var rd crdt.Reader
	var m crdt.Message
	orphaned := false
	count := 0
	// Admission is decided per entity by the authority the batch found: a relayed entity this
	// host lacked brings its own record, which must not refuse the entity's keys after it.
	var verdict map[Entity]entityVerdict
	for rd.Reset(b.Messages); rd.Next(&m) == nil; {
		if count++; count > maxCorrectionMessages {
			return h.refuse(hm, RefusedBatch, fmt.Sprintf("more than %d corrections in one batch; the rest dropped", maxCorrectionMessages))
		}
		if answering && (m.Type == crdt.DeleteEntity || m.Type == crdt.DeleteEntityNetwork) {
			handled, err := h.deletion(hm, &m, relayed, &orphaned)
			if err != nil {
				return err
			}
			if handled {
				continue
			}
		}
		v, decided := verdict[m.Entity]
		if !decided {
			v.err = h.auth.AdmitCorrection(idx, m.Entity, relayed)
			// Admitted only because of the window: a host entity the member relays.
			v.windowed = relayed && v.err == nil && h.auth.AdmitCorrection(idx, m.Entity, false) != nil
			v.lacked = h.w.lacks(m.Entity)
			if verdict == nil {
				verdict = make(map[Entity]entityVerdict)
			}
			verdict[m.Entity] = v
		}
		if why, reason := h.admitCorrection(hm, &m, relayed, v.lacked); reason != "" {
			if err := h.refuse(hm, why, reason); err != nil {
				return err
			}
			if m.Component == schema.ComponentAuthority { // a record; entity deletions name no component
				// The member keeps the record it sent (a survivor's avatar this host, restored
				// from an older checkpoint, never knew): re-assert this host's record over it, or
				// delete it, so that the member converges instead of sending it again forever.
				h.rejected(hm, m.Entity, m.Timestamp, errors.New(reason), false)
				h.rejectedAbsent(&m)
			}
			continue
		}
		err := v.err
		if err == nil && v.windowed && m.Timestamp > windowCeiling(h.tookOver) {
			reason := fmt.Sprintf("relayed correction of %v stamped %d, above what the room's clock was when this host took over (%d + %d)", m.Entity, m.Timestamp, h.tookOver, maxStampSkew)
			if ferr := h.refuse(hm, RefusedSurvivor, reason); ferr != nil {
				return ferr
			}
			err = errors.New(reason)
		}
		if err != nil {
			if h.holds(&m) {
				// This host already has the value or a newer one: the member converges to it
				// without a re-stamp (which would bury any newer write of the entity's owner
				// still on its way here). An expected race: counted, not logged.
				h.count.rejected.Add(1)
				h.count.rejectedRace.Add(1)
				continue
			}
			h.rejected(hm, m.Entity, m.Timestamp, err, false)
			h.rejectedAbsent(&m)
			continue
		}
		if !relayed {
			// The world's bounds (world_limits.go). Not on a survivor's first batch after a
			// migration: that relays the previous host's world, which fit it (lossless migration).
			if why, reason := h.admitGrowth(hm, &m); reason != "" {
				if err := h.refuse(hm, why, "correction: "+reason); err != nil {
					return err
				}
				continue
			}
		}
		before := h.w.r.Size()
		h.w.mergeRemote(&m, idx)
		if !relayed {
			h.charge(hm, before)
		}
	}
	if orphaned {
		h.respawnAvatars()
	}
	return nil
}

// holds reports whether the replica's entry for m's key is newer than m, or the same value.
func (s *syncer) holds(m *crdt.Message) bool {
	if m.Type != crdt.PutComponent && m.Type != crdt.DeleteComponent {
		return false
	}
	data, ts, ok, deleted := s.w.r.Get(m.Entity, m.Component)
	if !ok || ts < m.Timestamp {
		return false
	}
	if ts > m.Timestamp {
		return true
	}
	if m.Type == crdt.DeleteComponent {
		return deleted
	}
	return !deleted && bytes.Equal(data, m.Data)
}

// ownerPending reports whether e is written by another member (its avatar, or a lock it holds)
// whose answer to its sync snapshot has not arrived yet. Until it has, this host may hold an
// older value of the owner's writes than a member whose correction it rejected, and re-stamping
// the entity now would put that older value above the owner's latest write (seen in
// TestMigrationKeepsLastWrites): re-stamping waits for the owner's corrections.
func (h *hostRole) ownerPending(e Entity) bool {
	owner := h.auth.Author(e)
	if owner == h.w.self {
		return false
	}
	if _, present := h.env.roster()[owner]; !present {
		return false // memberLeft returns its entities to the host
	}
	hm := h.mems[owner]
	return hm == nil || !hm.answered
}
