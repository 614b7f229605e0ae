package world

import (
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
)

// handoff is an avatar on its way into a region: from another region's host, or arriving for
// the first time (saved data or the app's new player).
type handoff struct {
	owner  string
	values [][]byte // property values in schema order
	gen    uint32   // its generation in the destination
	ack    uint32   // the player's last applied input
	start  time.Time
	// away: when the player's client left the source's room (zero while it is a member): the
	// destination keeps counting from it, so that an avatar walking on without its player
	// leaves the world after LeaveGrace however many borders it crosses.
	away time.Time
}

// inhabitant is a player resident in a region: its avatar lives here and its inputs apply here.
type inhabitant struct {
	owner    string
	e        peer.Entity
	gen, ack uint32
	ackSent  uint32
	told     time.Time // last MsgResident sent
	handing  bool      // on its way out: inputs are dropped
	away     time.Time // when it stopped being a member here (zero while it is one)
	joined   bool      // its client has been a member of this room since it became resident
}

// joinGrace is how long a player handed into a region whose room its client has not joined yet
// stays resident there waiting for it (a client joins the rooms of a new view in parallel).
const joinGrace = 10 * time.Second

// telling is a MsgResident a member is told a few times over (a reliable message to a member
// still joining can be lost with its link).
type telling struct {
	m    resident
	next time.Time
	left int
}

const tellTimes, tellEvery = 5, time.Second

// regionApp is a region host's peer.App: the world's rules around the game's (App). It runs on
// the region host's loop only; the Server reaches it through peer.Peer.Do.
type regionApp struct {
	s     *Server
	rr    *regionRun
	r     Region
	app   App
	av    AvatarSchema
	fresh bool // no checkpoint: generate

	members map[peer.PeerIndex]string // member index → owner
	index   map[string]peer.PeerIndex // owner → member index
	byOwner map[string]*inhabitant
	retire  map[peer.Entity]int // avatars handed away, despawned after this many more ticks
	tell    map[peer.PeerIndex]*telling
	// stranded: members whose arrival failed every try, to be tried again (Server.strand)
	stranded map[string]strandedArrival
	ready    func()
	swept    time.Time // the last sweep
	saved    time.Time // the last save of the residents' data

	// superseded: residents the residence record names elsewhere with a newer generation, since
	// when (Server.fenceResidents; a cluster's only)
	superseded map[string]supersededAt
}

func (a *regionApp) Schemas() *schema.Table { return a.app.Schemas() }

// HostStart drops avatars a checkpoint held (players' data is kept apart and they arrive
// again), generates a region never visited, and opens the region to handovers.
func (a *regionApp) HostStart(w *peer.World) {
	a.s.log.Debug().Str("room", string(a.r.Room())).Int("residents", len(a.byOwner)).Msg("world: host start")
	for _, e := range w.EntitiesOf(a.av.ID) {
		_ = w.Despawn(e)
	}
	if a.fresh {
		a.app.Generate(w, a.r, Seed(a.r))
		a.fresh = false
	}
	if a.ready != nil {
		a.ready()
		a.ready = nil
	}
}

// SpawnAvatar is where the world hears of a member's arrival: it never gives a member a peer
// avatar (the region host writes avatars), but decides or tells where the player is resident.
func (a *regionApp) SpawnAvatar(w *peer.World, p peer.PeerInfo) (peer.Entity, error) {
	if p.Kind == "host" {
		return 0, nil
	}
	if a.members[p.Index] == p.ID {
		return 0, nil // asked again (the peer asks for every member without an avatar)
	}
	if _, known := a.members[p.Index]; !known {
		a.s.memberIn(a.rr, 1)
	}
	a.members[p.Index] = p.ID
	a.index[p.ID] = p.Index
	delete(a.tell, p.Index)
	if in := a.byOwner[p.ID]; in != nil {
		in.away, in.joined = time.Time{}, true
		in.told = time.Time{} // tell it at the end of this tick
		return 0, nil
	}
	a.s.wg.Add(1)
	go func() {
		defer a.s.wg.Done()
		a.s.arrival(a.rr, a.r, p.ID, p.Index)
	}()
	return 0, nil
}

func (a *regionApp) OnEvent(w *peer.World, ev peer.Event) {
	if ev.Kind == peer.EventRenumbered {
		a.renumbered(ev.From, ev.Entity)
		return
	}
	if ev.Kind != peer.EventPeerExited {
		return
	}
	owner, ok := a.members[ev.Peer]
	if !ok {
		return
	}
	delete(a.members, ev.Peer)
	delete(a.tell, ev.Peer)
	a.s.memberIn(a.rr, -1)
	if a.index[owner] != ev.Peer {
		return // an older index of a member that joined again: the player is still here
	}
	delete(a.index, owner)
	if in := a.byOwner[owner]; in != nil {
		in.away = a.s.now()
	}
}

// renumbered follows an avatar the peer moved from one entity number to another: a member holds
// the old number deleted (this host, restored from a checkpoint older than the dead host's world,
// spawned it under a number the dead host had used and deleted; peer/host_supersede.go). Without
// it the inhabitant would name an entity gone, and the sweep would despawn the moved avatar as
// owned by nobody: the player would stay resident with no avatar.
func (a *regionApp) renumbered(from, to peer.Entity) {
	for _, in := range a.byOwner {
		if in.e == from {
			in.e = to
		}
	}
	if n, retiring := a.retire[from]; retiring {
		delete(a.retire, from)
		a.retire[to] = n
	}
}

// RPC takes the inputs when a wrapper of the app (durable.App) hands Actions on as RPCs.
func (a *regionApp) RPC(w *peer.World, from peer.PeerIndex, typ uint32, data []byte) {
	a.Action(w, from, typ, data)
}

// Action applies a resident's input: exactly the next one in its sequence, else dropped (the
// client sends again what is not acknowledged).
func (a *regionApp) Action(w *peer.World, from peer.PeerIndex, typ uint32, data []byte) {
	if typ != ActionInput || !w.IsHost() {
		return
	}
	in := a.byOwner[a.members[from]]
	if in == nil || in.handing || a.index[in.owner] != from {
		a.s.count("input", "not_resident")
		return
	}
	seq, d, err := consumeInput(data)
	if err != nil || seq != in.ack+1 {
		a.s.count("input", "out_of_order")
		return
	}
	in.ack = seq
	a.app.Input(w, a.r, in.e, d)
}

// accept makes h's player resident here: its avatar spawns with h's values and generation.
func (a *regionApp) accept(w *peer.World, h handoff) bool {
	if old := a.byOwner[h.owner]; old != nil {
		if old.gen >= h.gen {
			return true // already here
		}
		_ = w.Despawn(old.e)
	}
	e, err := w.Spawn(a.av.ID, appendGen(nil, h.gen), h.values...)
	if err != nil {
		a.s.log.Warn().Err(err).Str("room", string(a.r.Room())).Str("owner", h.owner).Msg("world: avatar not spawned")
		return false
	}
	in := &inhabitant{owner: h.owner, e: e, gen: h.gen, ack: h.ack, ackSent: h.ack}
	a.byOwner[h.owner] = in
	_, member := a.index[h.owner]
	a.s.log.Debug().Str("owner", h.owner).Str("room", string(a.r.Room())).Uint32("gen", h.gen).Bool("member", member).Msg("world: avatar accepted")
	if idx, member := a.index[h.owner]; member {
		in.joined = true
		// Now, not at the next tick: the player's inputs wait for it.
		m := resident{X: uint16(a.r.X), Y: uint16(a.r.Y), Gen: in.gen, Ack: in.ack}
		if w.SendMessage(idx, MsgResident, appendResident(nil, m), true) == nil {
			in.told = a.s.now()
		}
	} else if !h.away.IsZero() {
		in.away, in.joined = h.away, true
	} else {
		in.away = a.s.now()
	}
	if !h.start.IsZero() {
		a.s.handedOver(a.s.now().Sub(h.start))
	}
	return true
}

// handedAway ends a handover on the source: the destination holds the avatar (ok) or refused it.
func (a *regionApp) handedAway(w *peer.World, owner string, dest Region, fenced bool, gen uint32, ok bool) {
	in := a.byOwner[owner]
	a.s.log.Debug().Str("owner", owner).Str("from", string(a.r.Room())).Str("room", string(dest.Room())).Uint32("gen", gen).
		Bool("ok", ok).Bool("fenced", fenced).Bool("held", in != nil).Msg("world: handed away")
	if in == nil {
		return
	}
	if !ok {
		// Back inside: the next tick does not try again at once. When the source fenced the
		// handover's generation in the residence record (settle), the avatar keeps it, and its
		// next handover claims one more; otherwise the record still names its own.
		in.handing = false
		if fenced {
			in.gen = max(in.gen, gen)
		}
		if v, okv := w.Get(in.e, a.av.Pos); okv {
			if p, okp := ParseVec(v); okp {
				p.X = min(max(p.X, a.r.Min.X), a.r.Max.X-1)
				p.Y = min(max(p.Y, a.r.Min.Y), a.r.Max.Y-1)
				_ = w.Set(in.e, a.av.Pos, AppendVec(nil, p))
			}
		}
		return
	}
	delete(a.byOwner, owner)
	a.retire[in.e] = 1
	if idx, member := a.index[owner]; member {
		t := &telling{m: resident{X: uint16(dest.X), Y: uint16(dest.Y), Gen: in.gen + 1, Ack: in.ack}, left: tellTimes}
		a.tell[idx] = t
		a.sendTell(w, idx, t, a.s.now()) // now, not at the next tick: the player waits for it
	}
}

// sendTell sends t to member idx and schedules the next time.
func (a *regionApp) sendTell(w *peer.World, idx peer.PeerIndex, t *telling, now time.Time) {
	if w.SendMessage(idx, MsgResident, appendResident(nil, t.m), true) == nil {
		t.next = now.Add(tellEvery)
		if t.left--; t.left <= 0 {
			delete(a.tell, idx)
		}
	}
}

// Tick runs the game's systems, then the world's: avatars past the region's bounds are handed
// over, avatars handed away retire, players gone save their data, and members hear where they
// are resident and what is acknowledged.
func (a *regionApp) Tick(w *peer.World, dt time.Duration) {
	if !w.IsHost() {
		return
	}
	a.app.Tick(w, a.r, dt)
	now := a.s.now()
	for e, n := range a.retire {
		if n--; n < 0 {
			_ = w.Despawn(e)
			delete(a.retire, e)
		} else {
			a.retire[e] = n
		}
	}
	if now.Sub(a.swept) >= time.Second {
		a.swept = now
		a.sweep(w, now)
	}
	def := &a.s.def
	for owner, in := range a.byOwner {
		if in.handing {
			continue
		}
		grace := a.s.leaveGrace
		if !in.joined {
			grace = max(grace, joinGrace) // handed here before its client joined this room
		}
		if !in.away.IsZero() && now.Sub(in.away) > grace {
			a.s.log.Debug().Str("owner", owner).Str("room", string(a.r.Room())).Uint32("gen", in.gen).Bool("joined", in.joined).Msg("world: resident left")
			a.s.left(owner, a.values(w, in.e), in.gen)
			_ = w.Despawn(in.e)
			delete(a.byOwner, owner)
			continue
		}
		v, _ := w.Get(in.e, a.av.Pos)
		p, ok := ParseVec(v)
		if !ok || a.r.Contains(p) {
			continue
		}
		if c := def.Clamp(p); c != p {
			p = c
			_ = w.Set(in.e, a.av.Pos, AppendVec(nil, p))
		}
		dest := def.RegionAt(p)
		if dest == a.r {
			continue
		}
		in.handing = true
		h := handoff{owner: owner, values: a.values(w, in.e), gen: in.gen + 1, ack: in.ack, start: now}
		if in.joined {
			h.away = in.away
		}
		a.s.wg.Add(1)
		go func() {
			defer a.s.wg.Done()
			a.s.transfer(a.r, dest, h, a.rr)
		}()
	}
	for owner, in := range a.byOwner {
		idx, member := a.index[owner]
		if !member {
			continue
		}
		if now.Sub(in.told) >= time.Second {
			m := resident{X: uint16(a.r.X), Y: uint16(a.r.Y), Gen: in.gen, Ack: in.ack}
			if w.SendMessage(idx, MsgResident, appendResident(nil, m), true) == nil {
				in.told, in.ackSent = now, in.ack
			}
		} else if in.ack != in.ackSent {
			if w.SendMessage(idx, MsgAck, appendU32(nil, in.ack), true) == nil {
				in.ackSent = in.ack
			}
		}
	}
	for idx, t := range a.tell {
		if now.Before(t.next) {
			continue
		}
		a.sendTell(w, idx, t, now)
	}
}

// strandedArrival is a member's arrival to try again at at.
type strandedArrival struct {
	idx peer.PeerIndex
	at  time.Time
}

// sweep tries stranded arrivals again, despawns avatars no resident owns (a member's replica merged back after the host
// restarted holds the avatars of before), and every SaveEvery saves the residents' data, so that
// a crash loses at most that much of where the players were.
func (a *regionApp) sweep(w *peer.World, now time.Time) {
	for owner, st := range a.stranded {
		switch {
		case a.members[st.idx] != owner || a.byOwner[owner] != nil:
			delete(a.stranded, owner) // gone, or resident here after all
		case !now.Before(st.at):
			delete(a.stranded, owner)
			a.s.wg.Add(1)
			go func() {
				defer a.s.wg.Done()
				a.s.arrival(a.rr, a.r, owner, st.idx)
			}()
		}
	}
	a.absent()
	owned := map[peer.Entity]bool{}
	for _, in := range a.byOwner {
		owned[in.e] = true
	}
	for _, e := range w.EntitiesOf(a.av.ID) {
		if _, retiring := a.retire[e]; !owned[e] && !retiring {
			_ = w.Despawn(e)
		}
	}
	if a.s.kv == nil || now.Sub(a.saved) < SaveEvery || len(a.byOwner) == 0 {
		return
	}
	a.saved = now
	batch := make([]savedPlayer, 0, len(a.byOwner))
	for owner, in := range a.byOwner {
		if !in.handing {
			batch = append(batch, savedPlayer{owner, a.values(w, in.e), in.gen})
		}
	}
	if a.s.cl != nil {
		a.s.fenceResidents(a.rr, a, batch)
		return
	}
	a.s.savePlayers(batch)
}

// supersededAt is a resident the residence record names elsewhere with a newer generation: the
// record as first seen so, and when.
type supersededAt struct {
	x, y  uint16
	gen   uint32
	since time.Time
}

// supersede lets go of owner's copy, of generation gen, when the record has named region (x, y)
// with generation rgen > gen for longer than a claim that fails stands (DefaultLoadTimeout: a
// destination writes its claim before it takes the avatar, and puts it back if it does not);
// until then it remembers since when. It tells the member where the player is.
func (a *regionApp) supersede(w *peer.World, owner string, gen uint32, rec residence, now time.Time) bool {
	in := a.byOwner[owner]
	if in == nil || in.handing || in.gen != gen {
		delete(a.superseded, owner)
		return false
	}
	seen, ok := a.superseded[owner]
	if !ok || seen.x != rec.x || seen.y != rec.y || seen.gen != rec.gen {
		a.superseded[owner] = supersededAt{x: rec.x, y: rec.y, gen: rec.gen, since: now}
		return false
	}
	if now.Sub(seen.since) <= DefaultLoadTimeout {
		return false
	}
	delete(a.superseded, owner)
	a.s.log.Debug().Str("owner", owner).Str("room", string(a.r.Room())).Uint32("gen", gen).Str("record", a.s.describe(rec)).Msg("world: superseded copy let go")
	_ = w.Despawn(in.e)
	delete(a.byOwner, owner)
	if idx, member := a.index[owner]; member {
		t := &telling{m: resident{X: rec.x, Y: rec.y, Gen: rec.gen}, left: tellTimes}
		a.tell[idx] = t
		a.sendTell(w, idx, t, now)
	}
	return true
}

// absent starts the arrival again of each member this node takes for resident here whose avatar
// this host does not hold, with no arrival under way (Server.forgetAbsent): the host heard of the
// member's arrival once, maybe while this node's memory still said so, and without this the
// member stayed with no avatar (docs/protocol.md §11 "Residence").
func (a *regionApp) absent() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for owner, idx := range a.index {
		if a.byOwner[owner] != nil || a.members[idx] != owner {
			continue
		}
		if _, waiting := a.stranded[owner]; waiting {
			continue
		}
		p := s.players[owner]
		if p == nil || p.region != a.r || p.moving > 0 || p.arriving > 0 || s.ctx.Err() != nil {
			continue
		}
		p.arriving++
		s.mAbsent.Inc()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.arrivalCounted(a.rr, a.r, owner, idx, p)
		}()
	}
}

// values copies e's property values in schema order.
func (a *regionApp) values(w *peer.World, e peer.Entity) [][]byte {
	sc, ok := w.SchemaOf(e)
	if !ok {
		return nil
	}
	out := make([][]byte, len(sc.Properties))
	for i := range sc.Properties {
		if v, ok := w.Get(e, i); ok {
			out[i] = append([]byte(nil), v...)
		}
	}
	return out
}
