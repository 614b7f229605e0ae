package signaling

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// The hub is the one goroutine that owns every room: membership, peer
// indices, terms, hosts and replica reports. Connection goroutines send it
// events on Server.events; it never blocks on a connection (sends to members
// go through non-blocking enqueues), so one slow socket cannot stall a room.

// hubEvent is one of the ev* types below.
type hubEvent any

// joinRequest is an authorized join, built by the connection's reader.
type joinRequest struct {
	room    RoomID
	user    string
	device  string // empty: the hub makes one up
	kind    Kind
	power   int
	mayHost bool
	// resume is the join's claim, its token checked; device is set (the server's made-up
	// device for the claimed index if the join named none).
	resume *Resume
	// freeDevice: a token without a device claim admitted the join (MaxDevicesPerToken).
	freeDevice bool
	// vouched is the term the claim's resume token was issued in (hasVouched: the server has
	// a secret); an open server vouches for none.
	vouched    Term
	hasVouched bool
}

// vouchedTerm is the term the server vouches for in the request's claim: its token's term with
// a secret, else the claim's own (an open server trusts claims, within MaxTermSkew of a running
// room).
func (req *joinRequest) vouchedTerm() Term {
	if req.resume == nil || req.hasVouched {
		return req.vouched
	}
	return req.resume.Term
}

// vouched is the term the server vouches for in req's claim to room r: its token's with a
// secret; on an open server the claim's own in a room rebuilt from claims, else the room's
// (the server issued every term of a room it ran, so a claim past it moves nothing).
func (h *hub) vouched(r *room, req *joinRequest) Term {
	t := req.vouchedTerm()
	if !req.hasVouched && !r.fromClaims {
		t = min(t, r.term)
	}
	return t
}

type joinResult struct {
	index PeerIndex
	id    Identity
	err   error
}

type evJoin struct {
	c     *conn
	req   joinRequest
	reply chan joinResult // buffered, capacity 1
}

type evLeave struct {
	c      *conn
	reason LeaveReason
}

type evSignal struct {
	c     *conn
	to    PeerIndex
	room  RoomID // optional check, "" if the sender named no room
	frame []byte // the encoded signal message for the recipient
	// kind and session name the signal in a refusal, so that its sender can send it again.
	kind    SignalKind
	session uint64
}

type evSynced struct{ c *conn }

type evReport struct {
	c *conn
	r Report
}

// evGrace is a room's resume grace running out; seq tells a stale timer apart.
type evGrace struct {
	r   *room
	seq uint64
}

type evRooms struct {
	reply chan []RoomInfo // buffered, capacity 1
}

type member struct {
	c       *conn
	room    *room
	index   PeerIndex
	id      Identity
	kind    Kind
	power   int
	mayHost bool
	synced  bool
	// syncedTerm is the last term in which the server recorded the member synced (Member.SyncedTerm):
	// the room's term when it reported synced or was elected, or what a resume claim's token
	// vouches for. A host trusts a member as a survivor of an earlier host only on this record.
	syncedTerm Term

	reported bool
	report   Report

	dropping bool // queued for removal as a slow consumer

	freeDevice bool      // admitted by a token without a device claim
	joinedAt   time.Time // for SyncTimeout

	// Signal budgets: pairs holds one bucket per recipient this member signals (entries of
	// members that left are deleted), recv the budget of signals relayed to this member.
	pairs map[PeerIndex]*tokenBucket
	recv  tokenBucket
}

func (m *member) info() Member {
	return Member{Index: m.index, ID: m.id, Kind: m.kind, Power: m.power, MayHost: m.mayHost, Synced: m.synced, SyncedTerm: m.syncedTerm}
}

type room struct {
	id      RoomID
	cfg     RoomConfig
	members []*member // ordered by index
	last    PeerIndex // the last index issued
	term    Term
	host    PeerIndex
	log     zerolog.Logger

	// Resume grace: while waiting, the room has no host and holds its election, because
	// members resumed naming awaitHost (in awaitTerm) as host and it may come back too.
	waiting   bool
	awaitHost PeerIndex
	awaitTerm Term
	graceSeq  uint64
	graceStop func() bool

	// fromClaims: a resume claim opened the room on a server that did not remember it, and the
	// server has not elected in it since: until then its term is its members' word.
	fromClaims bool
	// store: the room's exchange with Config.Store (store.go).
	store storeState
}

func (r *room) member(idx PeerIndex) *member {
	i, ok := slices.BinarySearchFunc(r.members, idx, func(m *member, idx PeerIndex) int { return cmp.Compare(m.index, idx) })
	if !ok {
		return nil
	}
	return r.members[i]
}

func (r *room) byID(id Identity) *member {
	for _, m := range r.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// retiredRoom keeps a deleted room's counters, so a room that empties and is
// opened again continues its peer indices and terms instead of reusing them.
type retiredRoom struct {
	last PeerIndex
	term Term
	seq  uint64
}

type retiredKey struct {
	id  RoomID
	seq uint64
}

// maxRetiredRooms bounds the memory spent on retired rooms (about 100 bytes
// each). Past it the oldest retired room is forgotten, and that room would
// restart its indices at 1 if it were opened again.
const maxRetiredRooms = 1 << 16

type hub struct {
	cfg   *Config
	log   zerolog.Logger
	stats *stats
	// resumeKey signs resume tokens; nil in open mode.
	resumeKey []byte
	// post hands a timer's event to the hub from the timer's goroutine; spawn runs f on a
	// goroutine that Server.Close waits for (a Store call).
	post  func(hubEvent)
	spawn func(f func())

	rooms        map[RoomID]*room
	members      map[*conn]*member
	retired      map[RoomID]retiredRoom
	retiredOrder []retiredKey // oldest first; entries may be stale
	retiredSeq   uint64

	// live mirrors every member's room and identity for Server.IsMember.
	live *liveMembers
	// refreshStop stops the pending ICE refresh timer (Config.ICERefresh).
	refreshStop func() bool
	// bans are the rooms' bans (moderation.go); banQueue hands their changes to the ban
	// writer (nil without Config.Bans).
	bans     map[RoomID]map[Identity]Ban
	banQueue *banQueue

	cands   []Candidate // scratch for elections
	drops   []*member   // slow consumers found during the current event
	dirty   []*room     // rooms whose counters the current event moved (startSaves)
	dropLog logLimiter
}

func newHub(cfg *Config, log zerolog.Logger, st *stats, resumeKey []byte, post func(hubEvent), spawn func(func())) *hub {
	return &hub{
		cfg: cfg, log: log, stats: st, resumeKey: resumeKey, post: post, spawn: spawn,
		rooms:   make(map[RoomID]*room),
		members: make(map[*conn]*member),
		retired: make(map[RoomID]retiredRoom),
		live:    &liveMembers{m: make(map[liveKey]PeerIndex)},
	}
}

// run handles events until quit is closed.
func (h *hub) run(events <-chan hubEvent, quit <-chan struct{}) {
	h.armICERefresh()
	for {
		select {
		case ev := <-events:
			h.handle(ev)
			h.processDrops()
			h.startSaves()
		case <-quit:
			for _, r := range h.rooms {
				h.endGrace(r)
			}
			if h.refreshStop != nil {
				h.refreshStop()
			}
			return
		}
	}
}

func (h *hub) handle(ev hubEvent) {
	switch ev := ev.(type) {
	case *evJoin:
		h.join(ev)
	case *evLeave:
		if m := h.members[ev.c]; m != nil {
			h.remove(m, ev.reason)
		}
	case *evSignal:
		h.signal(ev)
	case *evSynced:
		h.synced(ev.c)
	case *evReport:
		if m := h.members[ev.c]; m != nil {
			if ev.r.Term > m.room.term {
				// A member follows no term the server has not announced: the claim is false.
				h.refuse(m, fmt.Errorf("%w: report of term %d, room %q is at term %d", ErrBadMessage, ev.r.Term, m.room.id, m.room.term), 0)
				return
			}
			var prev *Report
			if m.reported {
				prev = &m.report
			}
			h.stats.hist.report(prev, ev.r)
			m.report, m.reported = ev.r, true
		}
	case *evGrace:
		h.graceOver(ev)
	case *evRooms:
		ev.reply <- h.snapshot()
	case *evCloseRoom:
		h.closeRoom(ev)
	case *evStoreLoaded:
		h.loaded(ev)
	case *evStoreSaved:
		h.saved(ev)
	case *evStoreRetry:
		h.saveRetry(ev)
	case *evStoreTimeout:
		h.loadTimedOut(ev)
	case *evICERefresh:
		h.refreshICE()
	case *evModerate:
		h.moderate(ev)
	default:
		panic(fmt.Sprintf("signaling: unknown hub event %T", ev))
	}
}

func (h *hub) join(ev *evJoin) {
	req := ev.req
	if b, ok := h.banned(req.room, NewIdentity(req.user, req.device)); ok {
		ev.reply <- joinResult{err: fmt.Errorf("%w: %s", ErrBanned, b.describe())}
		return
	}
	r := h.rooms[req.room]
	if r != nil && r.store.loading {
		h.deferJoin(r, ev)
		return
	}
	var old *member
	if r != nil && req.device != "" {
		old = r.byID(NewIdentity(req.user, req.device))
	}
	if rc := req.resume; rc != nil && r != nil {
		if held := r.member(rc.Index); held != nil && held != old {
			ev.reply <- joinResult{err: fmt.Errorf("%w: peer %d of room %q is %s", ErrIndexTaken, rc.Index, req.room, held.id)}
			return
		}
		// An open server vouches for no term but the running room's: a claim may run ahead of it
		// only as far as a member that missed a few elections can.
		if !req.hasVouched && rc.Term > r.term+MaxTermSkew {
			ev.reply <- joinResult{err: fmt.Errorf("%w: term %d, room %q is at term %d (at most %d ahead)", ErrResumeTerm, rc.Term, req.room, r.term, MaxTermSkew)}
			return
		}
	}
	limit := h.cfg.roomConfig(req.room).MaxMembers
	n := 0
	if r != nil {
		n = len(r.members)
	}
	if old != nil {
		n--
	}
	if n >= limit && old == nil && h.evictSquatter(r) {
		n--
	}
	if n >= limit {
		ev.reply <- joinResult{err: fmt.Errorf("%w: room %q has %d members, the limit is %d", ErrRoomFull, req.room, n, limit)}
		return
	}
	if req.freeDevice && old == nil && r != nil {
		// A token without a device claim lets its holder pick devices: bound how many.
		k := 0
		for _, o := range r.members {
			if o.freeDevice && o.id.User() == req.user {
				k++
			}
		}
		if k >= h.cfg.MaxDevicesPerToken {
			ev.reply <- joinResult{err: fmt.Errorf("%w: user %q has %d members in room %q through tokens without a device, the limit is %d",
				ErrTooManyDevices, req.user, k, req.room, h.cfg.MaxDevicesPerToken)}
			return
		}
	}
	if r == nil {
		if len(h.rooms) >= h.cfg.MaxRooms {
			ev.reply <- joinResult{err: fmt.Errorf("%w: %d rooms open, the limit is %d", ErrServerBusy, len(h.rooms), h.cfg.MaxRooms)}
			return
		}
		// A room that a claim opens afresh (the server restarted) has only its members' word
		// for its term; any other room's terms are all the server's own.
		_, remembered := h.retired[req.room]
		r = h.openRoom(req.room)
		if h.cfg.Store != nil {
			h.beginLoad(r, ev, remembered) // the join goes on once the counters are in (loaded)
			return
		}
		r.fromClaims = req.resume != nil && !remembered
	}
	if old != nil {
		// The newer connection wins: the old one is most likely a tab that
		// reloaded or a bot that reconnected before its socket timed out.
		old.c.enqueue(encodeError(fmt.Errorf("%w: %s joined again from another connection", ErrReplaced, old.id), 0))
		old.c.shutdown(closeInfo{reason: ReasonReplaced, code: websocket.ClosePolicyViolation, text: string(CodeReplaced), graceful: true})
		if req.resume != nil && old.index == req.resume.Index {
			// The member resumes over its own connection, which the server still holds (the
			// old socket has not timed out yet): it keeps its place, and the others hear
			// nothing, so the host does not take its avatar away.
			delete(h.members, old.c)
			old.c = ev.c
			old.kind, old.power, old.mayHost = req.kind, req.power, req.mayHost
			h.members[ev.c] = old
			h.stats.joins.Add(1)
			h.admit(r, old, req.resume, h.vouched(r, &req), false)
			ev.reply <- joinResult{index: old.index, id: old.id}
			return
		}
		h.detach(old, ReasonReplaced)
	}
	m := &member{c: ev.c, room: r, kind: req.kind, power: req.power, mayHost: req.mayHost, freeDevice: req.freeDevice, joinedAt: h.cfg.Clock.Now()}
	if rc := req.resume; rc != nil {
		m.index = rc.Index
		r.last = max(r.last, rc.Index)
		i, _ := slices.BinarySearchFunc(r.members, m.index, func(m *member, idx PeerIndex) int { return cmp.Compare(m.index, idx) })
		r.members = slices.Insert(r.members, i, m)
	} else {
		r.last++
		m.index = r.last
		r.members = append(r.members, m)
	}
	device := req.device
	if device == "" {
		device = serverDevicePrefix + strconv.FormatUint(uint64(m.index), 10)
	}
	m.id = NewIdentity(req.user, device)
	h.members[ev.c] = m
	h.live.add(r.id, m.id, m.index)
	h.stats.members.Add(1)
	h.stats.joins.Add(1)
	h.saveCounters(r) // before anyone hears of the index
	h.admit(r, m, req.resume, h.vouched(r, &req), true)
	ev.reply <- joinResult{index: m.index, id: m.id}
}

// admit finishes a join: it applies m's resume claim rc (if any), elects, and tells m and the others
// (announce: the others have not seen m yet).
func (h *hub) admit(r *room, m *member, rc *Resume, vouched Term, announce bool) {
	hostChanged := false
	if rc != nil {
		hostChanged = h.resume(r, m, rc, vouched)
		h.saveCounters(r) // a term the claim moved is saved before anyone hears of it
	}
	if h.elect(r) {
		hostChanged = true
	}
	h.send(m, h.joinedFrame(r, m))
	joinedFrame := mustMarshal(memberJoinedMsg{V: ProtocolVersion, Type: typeMemberJoined, Member: m.info()})
	for _, o := range r.members {
		if o == m {
			continue
		}
		if announce {
			h.send(o, joinedFrame)
		}
	}
	if hostChanged {
		h.broadcastHost(r, m)
	}
	ev := r.log.Info().Uint64("peer", uint64(m.index)).Str("peerId", string(m.id)).Str("kind", string(m.kind)).
		Int("power", m.power).Bool("mayHost", m.mayHost).Int("members", len(r.members))
	if rc != nil {
		ev.Bool("resumed", true).Uint64("claimedTerm", uint64(rc.Term)).Uint64("claimedHost", uint64(rc.Host)).
			Uint64("term", uint64(r.term)).Uint64("host", uint64(r.host)).Bool("waiting", r.waiting)
	}
	ev.Msg("member joined")
}

// resume applies the rules of a resume claim (docs/protocol.md §5 "Resume") to the room m has
// just rejoined with its claimed index, and reports whether the room's term or host changed.
// vouched is the term the claim's token vouches for (the claim's own term on an open server).
func (h *hub) resume(r *room, m *member, rc *Resume, vouched Term) bool {
	changed := false
	if rc.Synced {
		// The claim says the member held a host's state. The server records it synced in the
		// term its token vouches for (the member was in the room then and could have synced),
		// never in the claim's own term: a member that joined in term 2 must not claim to have
		// synced in term 1 and pass for a survivor of term 1's host. Nor the room's term: a room
		// rebuilt from claims after a restart takes the first claim's term, a lie too.
		m.synced = true
		m.syncedTerm = max(m.syncedTerm, vouched)
	}
	if rc.Term > r.term {
		if r.host != 0 {
			// The member knew a later term than this room's host: move the room past it, so
			// that no two members ever hold different hosts for one term. Only a term the
			// server vouches for moves a running room: an unvouched skew would let a member
			// raise the term (and get a token for it) again and again.
			if t := min(rc.Term, vouched); t > r.term {
				r.term = min(t+1, MaxTerm)
				changed = true
				r.log.Info().Uint64("term", uint64(r.term)).Uint64("host", uint64(r.host)).Uint64("claimed", uint64(rc.Term)).
					Msg("term raised past a resumed member's")
			}
		} else if r.fromClaims {
			r.term = rc.Term // rebuilding after a restart: the claims are all there is
		} else if t := min(rc.Term, vouched); t > r.term {
			r.term = t
		}
	}
	switch {
	case r.host == 0 && rc.Host == m.index && rc.Term == r.term && m.mayHost:
		// The host came back in its own term: it is host again, no term bump, no migration.
		r.host = m.index
		m.synced = true
		m.syncedTerm = r.term
		h.endGrace(r)
		r.log.Info().Uint64("term", uint64(r.term)).Uint64("host", uint64(r.host)).Msg("host resumed")
		return true
	case r.host == 0 && rc.Host != 0 && rc.Host != m.index && r.member(rc.Host) == nil:
		// A member names a host that has not come back (yet): give it ResumeGrace.
		if !r.waiting || rc.Term >= r.awaitTerm {
			r.awaitHost, r.awaitTerm = rc.Host, rc.Term
		}
		h.startGrace(r)
	case r.waiting && m.index == r.awaitHost:
		// The awaited host is back but cannot host in its term: wait no longer.
		h.endGrace(r)
	}
	return changed
}

func (h *hub) startGrace(r *room) {
	if r.waiting {
		return
	}
	r.waiting = true
	r.graceSeq++
	ev := &evGrace{r: r, seq: r.graceSeq}
	r.graceStop = h.cfg.AfterFunc(h.cfg.ResumeGrace, func() { h.post(ev) })
	r.log.Info().Uint64("term", uint64(r.term)).Uint64("awaiting", uint64(r.awaitHost)).Dur("grace", h.cfg.ResumeGrace).
		Msg("waiting for the host to resume")
}

// endGrace stops waiting; the caller elects.
func (h *hub) endGrace(r *room) {
	if !r.waiting {
		return
	}
	r.waiting = false
	r.graceSeq++
	r.awaitHost, r.awaitTerm = 0, 0
	if r.graceStop != nil {
		r.graceStop()
		r.graceStop = nil
	}
}

func (h *hub) graceOver(ev *evGrace) {
	r := ev.r
	if h.rooms[r.id] != r || !r.waiting || r.graceSeq != ev.seq {
		return
	}
	awaited := r.awaitHost
	h.endGrace(r)
	r.log.Info().Uint64("term", uint64(r.term)).Uint64("awaited", uint64(awaited)).Msg("resume grace over; electing")
	if h.elect(r) {
		h.broadcastHost(r, nil)
	}
}

func (h *hub) joinedFrame(r *room, self *member) []byte {
	ms := make([]Member, len(r.members))
	for i, m := range r.members {
		ms[i] = m.info()
	}
	pinned := r.cfg.PinnedHosts
	if pinned == nil {
		pinned = []Identity{}
	}
	return mustMarshal(joinedMsg{V: ProtocolVersion, Type: typeJoined, Room: r.id, Self: self.index, PeerID: self.id,
		Term: r.term, Host: r.host, Members: ms, Pinned: pinned, ResumeToken: resumeToken(h.resumeKey, r.id, self.index, r.term, self.id),
		ICEServers: h.iceServers(r.id, self.id)})
}

// broadcastHost tells every member of r except the room's host and term. With a secret each
// member's message carries its resume token for the new term, so one frame per member.
func (h *hub) broadcastHost(r *room, except *member) {
	var shared []byte
	for _, m := range r.members {
		if m == except {
			continue
		}
		if h.resumeKey == nil {
			if shared == nil {
				shared = mustMarshal(hostMsg{V: ProtocolVersion, Type: typeHost, Term: r.term, Host: r.host})
			}
			h.send(m, shared)
			continue
		}
		h.send(m, mustMarshal(hostMsg{V: ProtocolVersion, Type: typeHost, Term: r.term, Host: r.host,
			ResumeToken: resumeToken(h.resumeKey, r.id, m.index, r.term, m.id)}))
	}
}

func (h *hub) openRoom(id RoomID) *room {
	r := &room{id: id, cfg: h.cfg.roomConfig(id), log: h.log.With().Str("room", string(id)).Logger()}
	if old, ok := h.retired[id]; ok {
		r.last, r.term = old.last, old.term
		delete(h.retired, id)
	}
	h.rooms[id] = r
	h.stats.rooms.Add(1)
	r.log.Debug().Uint64("term", uint64(r.term)).Msg("room opened")
	return r
}

func (h *hub) retire(r *room) {
	h.endGrace(r)
	delete(h.rooms, r.id)
	h.stats.rooms.Add(-1)
	h.retiredSeq++
	h.retired[r.id] = retiredRoom{last: r.last, term: r.term, seq: h.retiredSeq}
	h.retiredOrder = append(h.retiredOrder, retiredKey{id: r.id, seq: h.retiredSeq})
	for len(h.retired) > maxRetiredRooms && len(h.retiredOrder) > 0 {
		k := h.retiredOrder[0]
		h.retiredOrder = h.retiredOrder[1:]
		if old, ok := h.retired[k.id]; ok && old.seq == k.seq {
			delete(h.retired, k.id)
		}
	}
	r.log.Debug().Uint64("term", uint64(r.term)).Msg("room closed")
}

// evictSquatter makes room in the full room r: the member that has waited longest unsynced,
// more than SyncTimeout, while the room had a host to sync from, is told evicted and removed.
// It reports whether one was.
func (h *hub) evictSquatter(r *room) bool {
	if r == nil || r.host == 0 {
		return false
	}
	now := h.cfg.Clock.Now()
	var v *member
	for _, m := range r.members {
		if !m.synced && !m.dropping && m.index != r.host && now.Sub(m.joinedAt) > h.cfg.SyncTimeout && (v == nil || m.joinedAt.Before(v.joinedAt)) {
			v = m
		}
	}
	if v == nil {
		return false
	}
	err := fmt.Errorf("%w: not synced %v after joining room %q, which is full", ErrEvicted, now.Sub(v.joinedAt).Round(time.Second), r.id)
	h.stats.refuse(err)
	v.room.log.Warn().Uint64("peer", uint64(v.index)).Str("peerId", string(v.id)).Dur("unsynced", now.Sub(v.joinedAt)).Msg("unsynced member evicted from a full room")
	v.c.enqueue(encodeError(err, 0))
	v.c.shutdown(closeInfo{reason: ReasonEvicted, graceful: true, code: websocket.ClosePolicyViolation, text: string(CodeEvicted)})
	h.remove(v, ReasonEvicted)
	return true
}

// detach takes m out of its room and tells the others, without electing.
func (h *hub) detach(m *member, reason LeaveReason) {
	r := m.room
	delete(h.members, m.c)
	if i := slices.Index(r.members, m); i >= 0 {
		r.members = slices.Delete(r.members, i, i+1)
	}
	h.stats.members.Add(-1)
	for _, o := range r.members {
		delete(o.pairs, m.index)
	}
	r.log.Info().Uint64("peer", uint64(m.index)).Str("peerId", string(m.id)).Str("reason", string(reason)).
		Int("members", len(r.members)).Msg("member left")
	h.live.remove(r.id, m.id)
	if h.cfg.MemberLeft != nil {
		h.cfg.MemberLeft(r.id, m.id, reason)
	}
	if len(r.members) == 0 {
		return
	}
	h.broadcast(r, mustMarshal(memberLeftMsg{V: ProtocolVersion, Type: typeMemberLeft, PeerIndex: m.index, PeerID: m.id, Reason: reason}))
}

// remove takes m out of its room, then closes the room or re-elects.
func (h *hub) remove(m *member, reason LeaveReason) {
	h.detach(m, reason)
	r := m.room
	if len(r.members) == 0 {
		h.retire(r)
		return
	}
	if h.elect(r) {
		h.broadcastHost(r, nil)
	}
}

// elect recomputes the host of r. When it changes, the term grows and the new
// host is marked synced: from now on its replica is the room's state.
func (h *hub) elect(r *room) bool {
	if r.waiting {
		return false // the resume grace holds the election
	}
	h.cands = h.cands[:0]
	for _, m := range r.members {
		h.cands = append(h.cands, Candidate{Index: m.index, ID: m.id, Power: m.power, JoinOrder: uint64(m.index), MayHost: m.mayHost, Synced: m.synced})
	}
	host, _ := Elect(h.cands, r.cfg.PinnedHosts)
	if host == r.host {
		return false
	}
	if cur := r.member(r.host); cur != nil && cur.mayHost && host != 0 {
		var win, now Candidate
		for _, c := range h.cands {
			switch c.Index {
			case host:
				win = c
			case cur.index:
				now = c
			}
		}
		if !Preempts(win, now, r.cfg.PinnedHosts) {
			return false // the running host keeps the room
		}
	}
	prev := r.host
	r.host = host
	r.term = min(r.term+1, MaxTerm) // saturates: a term never wraps
	r.fromClaims = false            // from now on the server issues the room's terms
	h.saveCounters(r)
	if m := r.member(host); m != nil {
		m.synced = true
		m.syncedTerm = r.term
	}
	r.log.Info().Uint64("term", uint64(r.term)).Uint64("host", uint64(host)).Uint64("previous", uint64(prev)).Msg("host elected")
	return true
}

// synced records that m holds the host's state in the room's term. A member reports synced again
// after each new host syncs it: the record of the term moves (once a term), and the host reads it
// (member-synced carries the term).
func (h *hub) synced(c *conn) {
	m := h.members[c]
	if m == nil || (m.synced && m.syncedTerm >= m.room.term) {
		return
	}
	first := !m.synced
	r := m.room
	m.synced = true
	m.syncedTerm = r.term
	h.broadcast(r, mustMarshal(memberSyncedMsg{V: ProtocolVersion, Type: typeMemberSynced, PeerIndex: m.index, Term: r.term}))
	if !first {
		return
	}
	h.stats.hist.synced(h.cfg.Clock.Now().Sub(m.joinedAt))
	if h.elect(r) {
		h.broadcastHost(r, nil)
	}
}

func (h *hub) signal(ev *evSignal) {
	m := h.members[ev.c]
	if m == nil {
		return
	}
	r := m.room
	var err error
	var to *member
	switch {
	case ev.room != "" && ev.room != r.id:
		err = fmt.Errorf("%w: signals stay in your room %q, not %q", ErrWrongRoom, r.id, ev.room)
	case ev.to == m.index:
		err = fmt.Errorf("%w: a member cannot signal itself", ErrBadSignal)
	default:
		if to = r.member(ev.to); to == nil {
			err = fmt.Errorf("%w: no member with peer index %d in room %q", ErrUnknownPeer, ev.to, r.id)
		}
	}
	if err == nil {
		err = h.budget(m, to)
	}
	if err == nil && !to.dropping && !to.c.enqueueSignal(ev.frame) {
		err = fmt.Errorf("%w: peer %d's queue is full; signal not relayed", ErrRecipientBusy, to.index)
	}
	if err != nil {
		h.stats.relayErrors.Add(1)
		if errors.Is(err, ErrRecipientBusy) {
			h.stats.shed.Add(1)
		}
		h.refuseFrame(m, err, encodeSignalError(err, ev.to, ev.kind, ev.session))
	}
}

// budget charges a signal from m to to against the pair's and the recipient's budgets.
func (h *hub) budget(m, to *member) error {
	now := h.cfg.Clock.Now()
	b := m.pairs[to.index]
	if b == nil {
		if m.pairs == nil {
			m.pairs = make(map[PeerIndex]*tokenBucket)
		}
		b = &tokenBucket{}
		m.pairs[to.index] = b
	}
	if !b.allow(now, h.cfg.SignalRate, h.cfg.SignalBurst) {
		return fmt.Errorf("%w: more than %g signals per second to peer %d", ErrRateLimited, h.cfg.SignalRate, to.index)
	}
	if !to.recv.allow(now, h.cfg.RecvSignalRate, h.cfg.RecvSignalBurst) {
		return fmt.Errorf("%w: peer %d receives more than %g signals per second; signal not relayed", ErrRecipientBusy, to.index, h.cfg.RecvSignalRate)
	}
	return nil
}

// refuse tells m why its message was refused and counts it against m (a repeat offender is
// dropped).
func (h *hub) refuse(m *member, err error, peer PeerIndex) {
	h.refuseFrame(m, err, encodeError(err, peer))
}

// refuseFrame is refuse with the error message encoded (frame).
func (h *hub) refuseFrame(m *member, err error, frame []byte) {
	h.stats.refuse(err)
	// Answers to a member that floods are shed like signals: they cannot make it a slow
	// consumer; its strikes drop it instead.
	if !m.dropping {
		m.c.enqueueSignal(frame)
	}
	m.c.strike(err)
}

func (h *hub) broadcast(r *room, frame []byte) {
	for _, m := range r.members {
		h.send(m, frame)
	}
}

// send queues frame for m. A full queue marks m as a slow consumer; it is
// dropped once the current event is done.
func (h *hub) send(m *member, frame []byte) {
	if m.room.holding() {
		m.room.store.held = append(m.room.store.held, heldFrame{m: m, frame: frame})
		return
	}
	if m.dropping || m.c.enqueue(frame) {
		return
	}
	m.dropping = true
	h.drops = append(h.drops, m)
}

// processDrops disconnects the slow consumers found by send. Removing one
// broadcasts to the rest, which may find more; each member is dropped once.
func (h *hub) processDrops() {
	for i := 0; i < len(h.drops); i++ {
		m := h.drops[i]
		if h.members[m.c] != m {
			continue
		}
		h.stats.slow.Add(1)
		if ok, suppressed := h.dropLog.allow(h.cfg.Clock.Now(), time.Second); ok {
			m.room.log.Warn().Uint64("peer", uint64(m.index)).Str("peerId", string(m.id)).Int("suppressed", suppressed).
				Msg("slow consumer dropped: send queue full")
		}
		m.c.shutdown(closeInfo{reason: ReasonDropped})
		h.remove(m, ReasonDropped)
	}
	clear(h.drops)
	h.drops = h.drops[:0]
}

func (h *hub) snapshot() []RoomInfo {
	out := make([]RoomInfo, 0, len(h.rooms))
	for _, r := range h.rooms {
		ri := RoomInfo{Room: r.id, Node: h.cfg.NodeName, Term: r.term, Host: r.host, Members: make([]MemberInfo, len(r.members))}
		for i, m := range r.members {
			mi := MemberInfo{PeerIndex: m.index, PeerID: m.id, Kind: m.kind, Synced: m.synced}
			if m.reported {
				rep := m.report
				mi.Replica = &rep
				if m.index != r.host {
					mi.Link = rep.Link
				}
			}
			ri.Members[i] = mi
		}
		out = append(out, ri)
	}
	slices.SortFunc(out, func(a, b RoomInfo) int { return cmp.Compare(a.Room, b.Room) })
	return out
}

// lockedLogLimiter is a logLimiter for any goroutine.
type lockedLogLimiter struct {
	mu sync.Mutex // guards l
	l  logLimiter
}

func (l *lockedLogLimiter) allow(now time.Time, every time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l.allow(now, every)
}

// logLimiter lets one log line through per interval and counts the rest.
type logLimiter struct {
	next       time.Time
	suppressed int
}

func (l *logLimiter) allow(now time.Time, every time.Duration) (bool, int) {
	if now.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.next, l.suppressed = now.Add(every), 0
	return true, n
}
