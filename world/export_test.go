package world

import (
	"context"
	"fmt"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// PeerOf returns the client's member of room (nil when it does not follow it).
func (c *Client) PeerOf(room signaling.RoomID) *peer.Peer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.follows[room]; f != nil {
		return f.p
	}
	return nil
}

// Inspect runs fn on the loop of the host of region (x, y), loading it first.
func (s *Server) Inspect(ctx context.Context, x, y int, fn func(w *peer.World)) error {
	r, err := s.Load(ctx, x, y)
	if err != nil {
		return err
	}
	s.mu.Lock()
	p := s.regions[r.Room()].peer
	s.mu.Unlock()
	if p == nil {
		return ErrUnknownRegion
	}
	return p.Do(ctx, fn)
}

// Debug describes the client's state for a failing test.
func (c *Client) Debug() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rooms []signaling.RoomID
	for r := range c.follows {
		rooms = append(rooms, r)
	}
	return fmt.Sprintf("resident %s gen %d ack %d pending %d follows %v", c.resident.Room(), c.gen, c.ack, c.pending, rooms)
}

// DebugPlayer describes what the server and the region hosts hold of owner.
func (s *Server) DebugPlayer(ctx context.Context, owner string) string {
	s.mu.Lock()
	p := s.players[owner]
	var out string
	if p != nil {
		out = fmt.Sprintf("record: region %s gen %d; ", p.region.Room(), p.gen)
	}
	type rp struct {
		room signaling.RoomID
		p    *peer.Peer
		a    *regionApp
	}
	var rs []rp
	for room, rg := range s.regions {
		if rg.state == loaded {
			rs = append(rs, rp{room, rg.peer, rg.app})
		}
	}
	s.mu.Unlock()
	for _, r := range rs {
		_ = r.p.Do(ctx, func(w *peer.World) {
			if in := r.a.byOwner[owner]; in != nil {
				idx, member := r.a.index[owner]
				out += fmt.Sprintf("%s: gen %d ack %d handing %v member %v/%d away %v; ", r.room, in.gen, in.ack, in.handing, member, idx, !in.away.IsZero())
			}
		})
	}
	return out
}

// Kill stops the Server as a killed node stops: its requests unanswered, its region hosts gone
// without the checkpoint and the saved players of an unload, no residence record removed.
func (s *Server) Kill() {
	s.stopCluster()
	s.cancel()
	s.wg.Wait()
}

// Claim claims owner's residence in r with generation gen (cluster.go).
func (s *Server) Claim(ctx context.Context, owner string, r Region, gen uint32) error {
	_, err := s.claim(ctx, owner, r, gen)
	return err
}

// Residence describes owner's residence record: "node room gen" ("" without one).
func (s *Server) Residence(ctx context.Context, owner string) string {
	cur, _, ok, err := s.residence(ctx, owner)
	if err != nil || !ok {
		return ""
	}
	return fmt.Sprintf("%s %s %d", cur.node, RoomName(s.def.Name, int(cur.x), int(cur.y)), cur.gen)
}

// ErrClosing is errClosing.
var ErrClosing = errClosing

// Unloading reports whether region (x, y) is being unloaded.
func (s *Server) Unloading(x, y int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regions[RoomName(s.def.Name, x, y)].state == unloading
}

// Remember makes this Server hold owner's saved data in memory, as a left() of long ago did.
func (s *Server) Remember(owner string, values [][]byte, gen uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.players[owner] = &playerRec{saved: values, gen: gen}
}

// SavePlayer writes owner's data to the store, as another node's left() does.
func (s *Server) SavePlayer(ctx context.Context, owner string, values [][]byte, gen uint32) error {
	return s.kv.save(ctx, owner, values, gen)
}

// Arrive decides where owner, arriving in region (x, y) and not in the world, is resident and
// with which generation (arrival's first steps, without the handover).
func (s *Server) Arrive(ctx context.Context, owner string, x, y int) (Region, uint32) {
	r, _ := s.def.Region(x, y)
	s.loadPlayer(ctx, owner)
	if s.cl != nil {
		if dest, gen, elsewhere, _ := s.arrivalCluster(ctx, r, owner); elsewhere {
			return dest, gen
		}
	}
	dest, h := s.arrive(r, owner)
	if h == nil {
		return dest, 0
	}
	s.mu.Lock()
	s.players[owner].moving-- // no transfer follows
	s.mu.Unlock()
	return dest, h.gen
}

// Settle decides a handover of owner from region from to dest with generation gen whose request
// failed (cluster.go).
func (s *Server) Settle(owner string, from, dest Region, gen uint32) bool {
	handed, _ := s.settle(owner, from, dest, gen)
	return handed
}

// PlayerRecord returns the room owner is resident in by this Server's memory ("" while it is
// not in the world) and the last generation handed out for it.
func (s *Server) PlayerRecord(owner string) (signaling.RoomID, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.players[owner]
	if p == nil || p.region.World == "" {
		if p == nil {
			return "", 0
		}
		return "", p.gen
	}
	return p.region.Room(), p.gen
}

// ArrivalTries is arrivalTries.
const ArrivalTries = arrivalTries

// EndHost ends the host of region (x, y) as a host that fails on its own ends: its loop gone
// before the janitor unloads it, so that the unload saves none of its residents.
func (s *Server) EndHost(x, y int) {
	s.mu.Lock()
	rg := s.regions[RoomName(s.def.Name, x, y)]
	cancel, done := rg.cancel, rg.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// ArriveThen runs an arrival's placement of owner arriving in region (x, y) (arrive, then the
// transfer) with between run after arrive decided and before the transfer; it reports whether the
// player was placed.
func (s *Server) ArriveThen(owner string, x, y int, between func()) bool {
	r, _ := s.def.Region(x, y)
	dest, h := s.arrive(r, owner)
	if h == nil {
		return true
	}
	between()
	return s.transfer(Region{}, dest, *h, nil)
}

// Place makes this Server remember owner resident in region (x, y) with generation gen, as a
// handover's or another arrival's success does.
func (s *Server) Place(owner string, x, y int, gen uint32) {
	r, _ := s.def.Region(x, y)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.players[owner] = &playerRec{region: r, gen: gen}
}

// Hosting reports whether region room is loaded or loading here (a lease holder's).
func (s *Server) Hosting(room signaling.RoomID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rg := s.regions[room]
	return rg != nil && (rg.state == loaded || rg.state == loading)
}

// Hear has the client hear a `resident` word naming region (x, y) with gen and ack from the host
// of region (fx, fy)'s room, as if that host had sent it.
func (c *Client) Hear(fx, fy, x, y int, gen, ack uint32) {
	from, _ := c.def.Region(fx, fy)
	c.post(from.Room(), func(n *roomNews) {
		n.resident = appendResident(nil, resident{X: uint16(x), Y: uint16(y), Gen: gen, Ack: ack})
	})
}

// Forget has this Server and the host of region (x, y) forget owner without a word to its client:
// the avatar despawned, the inhabitant and the memory of the player gone (a restart that lost it).
func (s *Server) Forget(ctx context.Context, owner string, x, y int) error {
	p, a := s.hostOf(x, y)
	s.mu.Lock()
	delete(s.players, owner)
	s.mu.Unlock()
	if p == nil {
		return ErrUnknownRegion
	}
	return p.Do(ctx, func(w *peer.World) {
		if in := a.byOwner[owner]; in != nil {
			_ = w.Despawn(in.e)
			delete(a.byOwner, owner)
		}
	})
}

// MemberOf reports whether owner is a member of the room of region (x, y) by its host.
func (s *Server) MemberOf(ctx context.Context, owner string, x, y int) bool {
	in := false
	s.onHost(ctx, x, y, func(a *regionApp) { _, in = a.index[owner] })
	return in
}

// Arriving returns how many arrivals of owner are under way.
func (s *Server) Arriving(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.players[owner]; p != nil {
		return p.arriving
	}
	return 0
}

// Superseded reports whether the host of region (x, y) takes owner's copy for superseded by the
// residence record (and waits out a failing claim's bound before it lets it go).
func (s *Server) Superseded(ctx context.Context, owner string, x, y int) bool {
	sup := false
	s.onHost(ctx, x, y, func(a *regionApp) { _, sup = a.superseded[owner] })
	return sup
}

// onHost runs f on the loop of region (x, y)'s host with its app, if the region is loaded here.
func (s *Server) onHost(ctx context.Context, x, y int, f func(a *regionApp)) {
	if p, a := s.hostOf(x, y); p != nil {
		_ = p.Do(ctx, func(*peer.World) { f(a) })
	}
}

// PutResidence writes owner's residence record as region (x, y), generation gen, unconditionally
// (a claim's undo putting the record back).
func (s *Server) PutResidence(ctx context.Context, owner string, x, y int, gen uint32) error {
	_, err := s.cl.res.Put(ctx, s.resKey(owner), appendResidence(nil, residence{node: s.cl.node, x: uint16(x), y: uint16(y), gen: gen}))
	return err
}

// hostOf returns the host peer and app of region (x, y) (nil when it is not loaded here).
func (s *Server) hostOf(x, y int) (*peer.Peer, *regionApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rg := s.regions[RoomName(s.def.Name, x, y)]; rg != nil {
		return rg.peer, rg.app
	}
	return nil, nil
}
