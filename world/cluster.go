package world

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// A world across the nodes of a cluster (docs/protocol.md §11 "Cluster"): each region is hosted
// by the node placement picks for its room; a node asks the owner of a region to load it and
// hands it avatars over NATS requests; which region a player is resident in is a record in the
// ResidentBucket, moved with a revision check.

// Cluster places a world's regions on the nodes of a cluster. Set ServerConfig.Cluster (with
// ServerConfig.Node and a Store) to run a Server as one node of it.
type Cluster struct {
	// Conn carries the requests between the nodes' Servers (the cluster's NATS, authenticated
	// like its other subjects, docs/protocol.md §7 "Cluster: authentication").
	Conn *nats.Conn
	// Owner names the node that hosts region r (§7 "Placement": the room's lease holder, else
	// the node placement picks for it). Required.
	Owner func(ctx context.Context, r Region) (string, error)
	// Timeout bounds a request to another node (0: DefaultLoadTimeout).
	Timeout time.Duration
}

// ResidentBucket is the JetStream KV bucket of where players are resident, key "W.RoomKey(owner)",
// value appendResidence.
const ResidentBucket = "concord_world_resident"

// Request subjects: concord.world.W.{handover,load}.NODE, one per node, so that a request
// reaches the owner of the region and no one else.
func handoverSubject(world, node string) string {
	return "concord.world." + world + ".handover." + node
}
func loadSubject(world, node string) string { return "concord.world." + world + ".load." + node }

// maxHandover bounds a handover request: x, y, gen, ack, the owner and a player record.
const maxHandover = 16 + 2 + 256 + maxPlayerRecord

// Errors of a cluster request (the reply names them).
var (
	ErrNotOwner   = errors.New("world: region not hosted by this node")
	ErrStaleClaim = errors.New("world: player resident elsewhere with a newer generation")
)

// clusterRun is a Server's part in a cluster.
type clusterRun struct {
	cfg  Cluster
	node string
	subs []*nats.Subscription
	res  jetstream.KeyValue
}

// residence is a record of ResidentBucket.
type residence struct {
	node string
	x, y uint16
	gen  uint32
}

// appendResidence encodes x u16 | y u16 | gen u32 | node (LE, the rest of the value).
func appendResidence(dst []byte, r residence) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, r.x)
	dst = binary.LittleEndian.AppendUint16(dst, r.y)
	dst = binary.LittleEndian.AppendUint32(dst, r.gen)
	return append(dst, r.node...)
}

func consumeResidence(b []byte) (residence, error) {
	if len(b) < 8 || len(b) > 8+256 {
		return residence{}, errShort
	}
	return residence{x: binary.LittleEndian.Uint16(b), y: binary.LittleEndian.Uint16(b[2:]),
		gen: binary.LittleEndian.Uint32(b[4:]), node: string(b[8:])}, nil
}

// appendHandover encodes a handover request: x u16 | y u16 | gen u32 | ack u32 | away u32 |
// len u16 | owner | player record (appendPlayer). away is how long the player's client has been
// gone from the source's room in milliseconds + 1, 0 while it is a member (clocks differ between
// nodes: a duration travels, not a time).
func appendHandover(dst []byte, dest Region, h handoff, now time.Time) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(dest.X))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(dest.Y))
	dst = binary.LittleEndian.AppendUint32(dst, h.gen)
	dst = binary.LittleEndian.AppendUint32(dst, h.ack)
	away := uint32(0)
	if !h.away.IsZero() {
		away = uint32(min(max(now.Sub(h.away).Milliseconds(), 0), 1<<31)) + 1
	}
	dst = binary.LittleEndian.AppendUint32(dst, away)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(h.owner)))
	dst = append(dst, h.owner...)
	return appendPlayer(dst, h.values, h.gen)
}

func consumeHandover(b []byte, now time.Time) (x, y int, h handoff, err error) {
	if len(b) < 18 || len(b) > maxHandover {
		return 0, 0, h, errShort
	}
	x, y = int(binary.LittleEndian.Uint16(b)), int(binary.LittleEndian.Uint16(b[2:]))
	h.gen, h.ack = binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
	if away := binary.LittleEndian.Uint32(b[12:]); away > 0 {
		h.away = now.Add(-time.Duration(away-1) * time.Millisecond)
	}
	n := int(binary.LittleEndian.Uint16(b[16:]))
	if n == 0 || n > 256 || len(b) < 18+n {
		return 0, 0, h, errShort
	}
	h.owner = string(b[18 : 18+n])
	var gen uint32
	if h.values, gen, err = consumePlayer(b[18+n:]); err != nil {
		return 0, 0, h, err
	}
	if gen != h.gen {
		return 0, 0, h, errShort
	}
	return x, y, h, nil
}

// startCluster opens the residence bucket and answers this node's requests.
func (s *Server) startCluster(ctx context.Context) error {
	c := s.cfg.Cluster
	if c.Conn == nil || c.Owner == nil || s.cfg.Node == "" || s.cfg.Store == nil {
		return errors.New("world: a Cluster needs Conn, Owner, ServerConfig.Node and a Store")
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultLoadTimeout
	}
	js, err := jetstream.New(s.cfg.Store.Conn())
	if err != nil {
		return err
	}
	res, err := createKV(ctx, js, jetstream.KeyValueConfig{Bucket: ResidentBucket,
		Description: "Concord world players' resident regions (docs/protocol.md §11)", History: 1,
		Storage: jetstream.FileStorage, Replicas: s.cfg.Store.Replicas(), MaxValueSize: 8 + 256})
	if err != nil {
		return err
	}
	cr := &clusterRun{cfg: *c, node: s.cfg.Node, res: res}
	hs, err := c.Conn.Subscribe(handoverSubject(s.def.Name, s.cfg.Node), s.onHandover)
	if err != nil {
		return err
	}
	ls, err := c.Conn.Subscribe(loadSubject(s.def.Name, s.cfg.Node), s.onLoad)
	if err != nil {
		_ = hs.Unsubscribe()
		return err
	}
	cr.subs = []*nats.Subscription{hs, ls}
	s.cl = cr
	return nil
}

func (s *Server) stopCluster() {
	if s.cl == nil {
		return
	}
	for _, sub := range s.cl.subs {
		_ = sub.Unsubscribe()
	}
}

// remote reports the node hosting r when it is not this one.
func (s *Server) remote(ctx context.Context, r Region) (string, bool, error) {
	if s.cl == nil {
		return "", false, nil
	}
	node, err := s.cl.cfg.Owner(ctx, r)
	if err != nil {
		return "", false, err
	}
	return node, node != s.cl.node, nil
}

// request sends a request to a node's Server and reads its reply ("ok" or an error).
func (s *Server) request(ctx context.Context, subject string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.cl.cfg.Timeout)
	defer cancel()
	m, err := s.cl.cfg.Conn.RequestWithContext(ctx, subject, data)
	if err != nil {
		return err
	}
	if string(m.Data) != "ok" {
		return fmt.Errorf("world: %s: %s", subject, m.Data)
	}
	return nil
}

func reply(m *nats.Msg, err error) {
	if err != nil {
		_ = m.Respond([]byte(err.Error()))
		return
	}
	_ = m.Respond([]byte("ok"))
}

// onLoad answers a load request: x u16 | y u16.
func (s *Server) onLoad(m *nats.Msg) {
	if len(m.Data) != 4 {
		s.count("cluster", "malformed")
		reply(m, errShort)
		return
	}
	x, y := int(binary.LittleEndian.Uint16(m.Data)), int(binary.LittleEndian.Uint16(m.Data[2:]))
	s.wg.Add(1)
	go func() { // a load waits for its host: off NATS's delivery goroutine
		defer s.wg.Done()
		r, ok := s.def.Region(x, y)
		if !ok {
			s.count("cluster", "no_region")
			reply(m, ErrUnknownRegion)
			return
		}
		if _, remote, err := s.remote(s.ctx, r); err != nil || remote {
			s.count("cluster", "not_owner")
			reply(m, ErrNotOwner)
			return
		}
		reply(m, s.load(s.ctx, r))
	}()
}

// onHandover answers a handover request: the avatar is made resident in a region of this node.
func (s *Server) onHandover(m *nats.Msg) {
	x, y, h, err := consumeHandover(m.Data, s.now())
	if err == nil {
		err = s.checkValues(h.values)
	}
	if err != nil {
		s.count("cluster", "malformed")
		reply(m, errShort)
		return
	}
	h.start = s.now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		dest, ok := s.def.Region(x, y)
		if !ok {
			s.count("cluster", "no_region")
			reply(m, ErrUnknownRegion)
			return
		}
		if _, remote, err := s.remote(s.ctx, dest); err != nil || remote {
			s.count("cluster", "not_owner")
			reply(m, ErrNotOwner)
			return
		}
		if !s.deliverLocal(dest, h) {
			reply(m, errors.New("world: handover refused"))
			return
		}
		s.mu.Lock()
		p := s.players[h.owner]
		if p == nil {
			p = &playerRec{}
			s.players[h.owner] = p
		}
		p.region, p.gen = dest, h.gen
		s.mu.Unlock()
		reply(m, nil)
	}()
}

// deliverRemote hands h to region dest on node, from region from of this node.
func (s *Server) deliverRemote(node string, from, dest Region, h handoff) (ok, fenced bool) {
	err := s.request(s.ctx, handoverSubject(s.def.Name, node), appendHandover(nil, dest, h, s.now()))
	if err == nil {
		return true, false
	}
	s.log.Warn().Err(err).Str("room", string(dest.Room())).Str("node", node).Msg("world: handover to another node refused")
	return s.settle(h.owner, from, dest, h.gen)
}

// settleUnread is how much longer than the destination's bound settle keeps reading a record
// the store does not answer: the source that gave up at the bound kept its copy while the
// destination, whose claim had landed, held one too (TestWorldCluster under load: two avatars).
const settleUnread = 30 * time.Second

// settle decides a handover whose request failed: a reply that did not come in time (a node
// under load) may hide a destination that took the avatar, or one still about to. The residence
// record decides. A newer generation than the handover's: the player went on from the
// destination, the source lets its copy go (true). The destination's claim: the destination is
// taking it, or failed to and puts the record back — watched until the destination's own bound
// (DefaultLoadTimeout) has passed, the claim then standing means it holds the player (true).
// Anything else: the source writes the record for itself with the handover's generation,
// revision-checked, so that the destination's claim of it is refused from then on, and keeps the
// avatar (false; handedAway gives it the generation). Without it, both the source and the
// destination held an avatar of the player.
func (s *Server) settle(owner string, from, dest Region, gen uint32) (handed, fenced bool) {
	defer func() {
		s.log.Debug().Str("owner", owner).Str("from", string(from.Room())).Str("room", string(dest.Room())).Uint32("gen", gen).
			Bool("handed", handed).Bool("fenced", fenced).Msg("world: handover settled")
	}()
	key := s.resKey(owner)
	arrival := from.World == "" // a first arrival's, not a handover's: no source holds the avatar
	deadline := s.now().Add(DefaultLoadTimeout + time.Second)
	for {
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		cur, rev, ok, err := s.residence(ctx, owner)
		switch {
		case err != nil:
		case ok && cur.gen > gen && arrival:
			// Placed since by another arrival or gone on: the arrival reads the record again.
			cancel()
			return false, false
		case ok && cur.gen > gen:
			cancel()
			return true, false
		case ok && cur.gen == gen && int(cur.x) == dest.X && int(cur.y) == dest.Y:
			if s.now().After(deadline) {
				cancel()
				return true, false
			}
		case arrival:
			// No claim of the destination's: nothing to fence with, as no region holds the
			// player (a record written for from named region (0, 0), where no host held it).
			// The arrival tries again, reading the record: a claim of the destination's
			// landing later is seen there, or replaced by a newer generation in the same region.
			cancel()
			return false, false
		default:
			v := appendResidence(nil, residence{node: s.cl.node, x: uint16(from.X), y: uint16(from.Y), gen: gen})
			if rev == 0 {
				_, err = s.cl.res.Create(ctx, key, v)
			} else {
				_, err = s.cl.res.Update(ctx, key, v, rev)
			}
			if err == nil {
				cancel()
				s.count("cluster", "handover_fenced")
				return false, true
			}
		}
		cancel()
		if s.now().After(deadline.Add(settleUnread)) {
			return false, false // the store does not answer: the source keeps the avatar, as before
		}
		select {
		case <-s.ctx.Done():
			return false, false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// loadRemote asks node to load r.
func (s *Server) loadRemote(ctx context.Context, node string, r Region) error {
	b := binary.LittleEndian.AppendUint16(nil, uint16(r.X))
	return s.request(ctx, loadSubject(s.def.Name, node), binary.LittleEndian.AppendUint16(b, uint16(r.Y)))
}

func (s *Server) resKey(owner string) string {
	return s.def.Name + "." + durable.RoomKey(signaling.RoomID(owner))
}

// residence reads where owner is resident (ok false: nowhere recorded).
func (s *Server) residence(ctx context.Context, owner string) (residence, uint64, bool, error) {
	e, err := s.cl.res.Get(ctx, s.resKey(owner))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return residence{}, 0, false, nil
	}
	if err != nil {
		return residence{}, 0, false, err
	}
	r, err := consumeResidence(e.Value())
	if err != nil {
		return residence{}, e.Revision(), false, nil // not ours to trust: overwritten by the next claim
	}
	return r, e.Revision(), true, nil
}

// claim records that owner becomes resident in dest (on this node) with generation gen. It is
// refused when the record holds a newer generation, or the same one in another region: the
// update is conditional on the revision read, so that of two nodes claiming the same player at
// once one fails and does not make it resident. undo puts the record back as it was, unless it
// changed since (the destination did not take the avatar after all).
func (s *Server) claim(ctx context.Context, owner string, dest Region, gen uint32) (undo func(), err error) {
	key := s.resKey(owner)
	for range 3 {
		e, err := s.cl.res.Get(ctx, key)
		var prev []byte
		var rev uint64
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, err
		default:
			prev, rev = e.Value(), e.Revision()
			if cur, err := consumeResidence(prev); err == nil &&
				(cur.gen > gen || cur.gen == gen && (int(cur.x) != dest.X || int(cur.y) != dest.Y)) {
				if e := s.log.Debug(); e.Enabled() {
					e.Str("owner", owner).Str("room", string(dest.Room())).Uint32("gen", gen).Str("record", s.describe(cur)).Msg("world: claim refused: stale")
				}
				s.count("cluster", "stale_claim")
				return nil, ErrStaleClaim
			}
		}
		v := appendResidence(nil, residence{node: s.cl.node, x: uint16(dest.X), y: uint16(dest.Y), gen: gen})
		var nrev uint64
		if rev == 0 {
			nrev, err = s.cl.res.Create(ctx, key, v)
		} else {
			nrev, err = s.cl.res.Update(ctx, key, v, rev)
		}
		if err != nil {
			// A write whose reply did not come (the store under load) may have landed: the
			// record then names this region, and a source settling on it let its copy go while
			// this host, taking the claim for failed, never took the avatar. Read what it holds.
			rctx, rcancel := context.WithTimeout(s.ctx, 2*time.Second)
			e, rerr := s.cl.res.Get(rctx, key)
			rcancel()
			if rerr == nil && bytes.Equal(e.Value(), v) {
				nrev, err = e.Revision(), nil
			} else if rerr != nil && !errors.Is(rerr, jetstream.ErrKeyNotFound) {
				return nil, err
			}
		}
		if err == nil {
			s.log.Debug().Str("owner", owner).Str("room", string(dest.Room())).Uint32("gen", gen).Uint64("rev", nrev).Msg("world: claimed")
			return func() {
				uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var err error
				if prev == nil {
					err = s.cl.res.Delete(uctx, key, jetstream.LastRevision(nrev))
				} else {
					_, err = s.cl.res.Update(uctx, key, prev, nrev)
				}
				s.log.Debug().Err(err).Str("owner", owner).Str("room", string(dest.Room())).Uint32("gen", gen).Msg("world: claim undone")
			}, nil
		}
		// Someone wrote between the read and the update: read again.
	}
	s.count("cluster", "claim_conflict")
	return nil, ErrStaleClaim
}

// fenceResidents reads the residence record of each of rr's residents in batch (a's, every
// SaveEvery) and saves the data of those it still names; a resident it names in another region
// with a newer generation is another host's now (two arrivals on two nodes that each read no
// record, a claim of a newer generation made from a node whose memory of the player was newer):
// that copy is not saved over the newer one's data, and once the record has stood so past a
// failing claim's bound its host lets it go and tells the member where the player is
// (regionApp.supersede). Without it both avatars stayed for good. It runs on a goroutine of its own.
func (s *Server) fenceResidents(rr *regionRun, a *regionApp, batch []savedPlayer) {
	if s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		type stale struct {
			owner string
			gen   uint32
			rec   residence
		}
		var stales []stale
		for _, p := range batch {
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			cur, _, ok, err := s.residence(ctx, p.owner)
			if err == nil && ok && cur.gen > p.gen && (int(cur.x) != a.r.X || int(cur.y) != a.r.Y) {
				cancel()
				stales = append(stales, stale{p.owner, p.gen, cur})
				continue
			}
			if err == nil {
				err = s.kv.save(ctx, p.owner, p.values, p.gen)
			}
			cancel()
			if err != nil {
				s.log.Warn().Err(err).Str("owner", p.owner).Msg("world: player data not saved in the store")
				return
			}
		}
		s.mu.Lock()
		hp := rr.peer
		s.mu.Unlock()
		if hp == nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		defer cancel()
		var gone []stale
		_ = hp.Do(ctx, func(w *peer.World) {
			now := s.now()
			for _, st := range stales {
				if a.supersede(w, st.owner, st.gen, st.rec, now) {
					gone = append(gone, st)
				}
			}
			// Those the record names here again, or not elsewhere newer, are no longer suspect.
			for owner := range a.superseded {
				if !slices.ContainsFunc(stales, func(st stale) bool { return st.owner == owner }) {
					delete(a.superseded, owner)
				}
			}
		})
		if len(gone) == 0 {
			return
		}
		s.mu.Lock()
		for _, st := range gone {
			s.count("cluster", "superseded")
			if p := s.players[st.owner]; p != nil && p.region == a.r && p.gen == st.gen {
				p.region = Region{} // the record's region holds it: an arrival reads it there
			}
		}
		s.mu.Unlock()
	}()
}

// describe formats a residence record for a log line: "node room gen".
func (s *Server) describe(r residence) string {
	return fmt.Sprintf("%s %s %d", r.node, RoomName(s.def.Name, int(r.x), int(r.y)), r.gen)
}

// unclaim removes owner's record when it still says dest and gen (the player left the world).
func (s *Server) unclaim(ctx context.Context, owner string, dest Region, gen uint32) {
	cur, rev, ok, err := s.residence(ctx, owner)
	if err != nil || !ok || cur.gen != gen || int(cur.x) != dest.X || int(cur.y) != dest.Y {
		return
	}
	err = s.cl.res.Delete(ctx, s.resKey(owner), jetstream.LastRevision(rev))
	s.log.Debug().Err(err).Str("owner", owner).Str("room", string(dest.Room())).Uint32("gen", gen).Msg("world: unclaimed")
}

// arrivalCluster reads where owner is resident across the cluster when it arrives in r. When
// that is another region (on any node), the member is told to go there (elsewhere). Otherwise
// the local rules decide (a first arrival, or r's host restarted on this node), with a
// generation above the record's so that the claim passes.
//
// A record that cannot be read decides nothing (err): taken for no record, the player, resident
// elsewhere, arrived anew here with a newer generation, and two hosts held an avatar of it.
func (s *Server) arrivalCluster(ctx context.Context, r Region, owner string) (dest Region, gen uint32, elsewhere bool, err error) {
	cur, _, ok, err := s.residence(ctx, owner)
	if err != nil {
		s.log.Warn().Err(err).Str("owner", owner).Msg("world: residence not read")
		return Region{}, 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.players[owner]
	if p == nil {
		p = &playerRec{}
		s.players[owner] = p
	}
	if e := s.log.Debug(); e.Enabled() {
		e.Str("owner", owner).Str("room", string(r.Room())).Bool("recorded", ok).Str("record", s.describe(cur)).
			Str("memory", string(p.region.Room())).Uint32("memgen", p.gen).Msg("world: arrival reads residence")
	}
	if ok {
		if d, okr := s.def.Region(int(cur.x), int(cur.y)); okr && d != r {
			return d, cur.gen, true, nil
		}
		p.gen = max(p.gen, cur.gen)
		if cur.node != s.cl.node {
			// Resident here by another node's claim: r reopened on this node after that node
			// died, and whatever this node remembers of the player is older.
			p.region = Region{}
		}
	}
	if p.region.World != "" && p.region != r {
		p.region = Region{} // this node's memory of a player gone on to other nodes
	}
	return Region{}, 0, false, nil
}
