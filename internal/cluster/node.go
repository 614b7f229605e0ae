package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/signaling"
)

// Defaults for zero Config fields.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultHeartbeatTimeout  = 4 * time.Second
	DefaultRequestTimeout    = 2 * time.Second
)

// releaseBudget bounds the lease releases of a graceful stop.
const releaseBudget = 500 * time.Millisecond

// Config configures a Node. Store and Name are required.
type Config struct {
	// Store is the node's durable store: its NATS connection and room directory.
	Store *durable.Store
	// Name is this node's name, unique in the cluster.
	Name string
	// LeaseTTL is the lifetime of a room lease (durable.DirectoryConfig.TTL). If zero,
	// durable.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// HeartbeatInterval is how often each side of a relay says it is alive; HeartbeatTimeout
	// the silence after which the other side is taken for dead. If zero, the defaults.
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// RequestTimeout bounds a request to another node (open, rooms). If zero, the default.
	RequestTimeout time.Duration
	// WriteWait and CloseGrace bound an edge's writes and its close handshake with the member.
	// If zero, the signaling defaults.
	WriteWait, CloseGrace time.Duration
	// Placement, if set, places the dedicated hosts of this node's rooms: the node gives it its
	// directory (PlacementConfig.Directory and Alive), keeps the leases it wants (a room with no
	// member here whose host runs here; rooms with members here and rooms just routed here are
	// kept anyway), and pokes it when a lease is taken for a join or lost (the room's members here
	// are closed by then, so that they resume on the new owner).
	Placement *Placement
	// Clock is the directory's clock (lease expiry). If nil, RealClock.
	Clock Clock
	// Registerer, if set, receives the cluster metrics (concord_cluster_*).
	Registerer prometheus.Registerer
	// Logger; the zero value discards.
	Logger zerolog.Logger
}

// Node is this process as a node of a cluster: the signaling.Router of its signaling server, the
// owner side of the relays other nodes open to it, and the answer to their room listings.
type Node struct {
	cfg  Config
	dir  *durable.Directory
	nc   *nats.Conn
	name string
	log  zerolog.Logger

	sig  atomic.Pointer[signaling.Server]
	subs []*nats.Subscription
	// Keep and Lost run on the directory's goroutine, which Close stops last.

	mu        sync.Mutex // guards the following fields
	pipes     map[*pipe]struct{}
	acquired  map[signaling.RoomID]time.Time // leases taken for joins, kept at least a TTL
	seen      map[string]time.Time           // nodes heard on aliveSubject
	openRooms map[signaling.RoomID]bool      // the rooms open here, as of openAt
	openAt    time.Time
	closed    bool

	dying bool // tests: Close leaves the leases to expire, as a killed node does

	owners  atomic.Int64 // relayed websockets served here
	rtt     atomic.Int64 // nanoseconds, the last NATS round trip measured
	refused refusals     // control messages and frames refused (concord_cluster_refused_total)
	quit    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// New starts a node: it answers open and rooms requests addressed to it and sends heartbeats.
// Attach its signaling server before serving.
func New(cfg Config) (*Node, error) {
	if cfg.Store == nil || cfg.Name == "" {
		return nil, errors.New("cluster: Config needs a Store and a Name")
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.WriteWait <= 0 {
		cfg.WriteWait = signaling.DefaultWriteWait
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	n := &Node{cfg: cfg, nc: cfg.Store.Conn(), name: cfg.Name, log: cfg.Logger,
		pipes: map[*pipe]struct{}{}, acquired: map[signaling.RoomID]time.Time{}, seen: map[string]time.Time{}, quit: make(chan struct{})}
	var freed func(signaling.RoomID)
	if cfg.Placement != nil {
		freed = func(signaling.RoomID) { cfg.Placement.Poke() } // a stopping node handed a room over
	}
	dir, err := cfg.Store.Directory(durable.DirectoryConfig{Node: cfg.Name, TTL: cfg.LeaseTTL, Keep: n.keep, Lost: n.lost,
		Freed: freed, Alive: n.heardLately, Now: cfg.Clock.Now, Logger: cfg.Logger.With().Str("component", "directory").Logger()})
	if err != nil {
		return nil, err
	}
	n.dir = dir
	if p := cfg.Placement; p != nil {
		p.attach(dir, n.Alive)
	}
	for subj, h := range map[string]nats.MsgHandler{
		openSubject(n.name):  n.serveOpen,
		roomsSubject(n.name): n.serveRooms,
		aliveSubject:         n.heard,
	} {
		sub, err := n.nc.Subscribe(subj, h)
		if err != nil {
			for _, s := range n.subs {
				_ = s.Unsubscribe()
			}
			dir.Close()
			return nil, fmt.Errorf("cluster: subscribe %s: %w", subj, err)
		}
		n.subs = append(n.subs, sub)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(&collector{n: n})
	}
	n.wg.Add(1)
	go n.heartbeats()
	return n, nil
}

// Subjects (doc.go).
func openSubject(node string) string  { return "concord.node." + node + ".open" }
func roomsSubject(node string) string { return "concord.node." + node + ".rooms" }
func upSubject(id string) string      { return "concord.relay." + id + ".up" }

// aliveSubject carries every node's presence: its name, every HeartbeatInterval.
const aliveSubject = "concord.nodes.alive"

// maxNodes bounds the node names remembered from aliveSubject.
const maxNodes = 1024

// heard records a node's presence.
func (n *Node) heard(m *nats.Msg) {
	a, err := DecodeAlive(m.Data)
	if err != nil {
		n.refuse(err)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.seen[a.Node]; ok || len(n.seen) < maxNodes {
		n.seen[a.Node] = time.Now()
	}
}

// heardLately reports whether node name was heard from within HeartbeatTimeout (this one is):
// heartbeats travel over the cluster's routes, which carry them while JetStream elects a leader.
func (n *Node) heardLately(name string) bool {
	if name == n.name {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.seen[name]
	return ok && time.Since(at) <= n.cfg.HeartbeatTimeout
}

// Alive lists the nodes heard from within HeartbeatTimeout, this one included, sorted.
func (n *Node) Alive() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []string{n.name}
	for name, at := range n.seen {
		if time.Since(at) > n.cfg.HeartbeatTimeout {
			delete(n.seen, name)
			continue
		}
		if name != n.name {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
func downSubject(id string) string { return "concord.relay." + id + ".down" }

// Attach sets the signaling server whose rooms this node serves.
func (n *Node) Attach(s *signaling.Server) { n.sig.Store(s) }

// Name is this node's name.
func (n *Node) Name() string { return n.name }

// Close stops answering, ends every relay endpoint and waits for the node's goroutines. Close the
// signaling server first, so that its connections end gracefully. Idempotent.
func (n *Node) Close() {
	n.once.Do(func() {
		for _, s := range n.subs {
			_ = s.Unsubscribe()
		}
		n.mu.Lock()
		n.closed = true
		for p := range n.pipes {
			p.fail()
		}
		n.mu.Unlock()
		close(n.quit)
		n.wg.Wait()
		if !n.dying {
			handOver(n.dir, releaseBudget)
		}
		n.dir.Close()
	})
}

// handOver releases every lease dir holds, within budget: a graceful stop hands its rooms over
// at once rather than after a TTL (the other nodes' next placement pass takes them). Bounded:
// when the cluster stops as a whole the bucket no longer answers, and the node must still shut
// its embedded server down within its grace.
func handOver(dir *durable.Directory, budget time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	for _, room := range dir.Held() {
		_ = dir.Release(ctx, room)
	}
}

// Directory is the node's room directory.
func (n *Node) Directory() *durable.Directory { return n.dir }

// keep tells the directory whether to renew room's lease: while it has members here, was routed
// here within a TTL, or placement keeps it (Config.Placement).
func (n *Node) keep(room signaling.RoomID) bool {
	if n.Recent(room) || (n.cfg.Placement != nil && n.cfg.Placement.Keep(room)) {
		return true
	}
	return n.openHere(room)
}

// openHere reports whether room is open in this node's signaling hub (a snapshot at most a
// second old: the directory asks for each of its rooms in turn).
func (n *Node) openHere(room signaling.RoomID) bool {
	n.mu.Lock()
	if time.Since(n.openAt) > time.Second {
		n.mu.Unlock()
		open := map[signaling.RoomID]bool{}
		if sig := n.sig.Load(); sig != nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
			rooms, err := sig.Rooms(ctx)
			cancel()
			if err != nil {
				return true // not known: keep it rather than drop a room with members
			}
			for _, r := range rooms {
				open[r.Room] = true
			}
		}
		n.mu.Lock()
		n.openRooms, n.openAt = open, time.Now()
	}
	defer n.mu.Unlock()
	return n.openRooms[room]
}

// lost closes room's members here (they resume on the new owner) and pokes placement.
func (n *Node) lost(room signaling.RoomID) {
	if sig := n.sig.Load(); sig != nil {
		sig.CloseRoom(room)
	}
	if n.cfg.Placement != nil {
		n.cfg.Placement.Poke()
	}
}

func (n *Node) track(p *pipe) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.pipes[p] = struct{}{}
	return true
}

func (n *Node) forget(p *pipe) {
	n.mu.Lock()
	delete(n.pipes, p)
	n.mu.Unlock()
}

// heartbeats runs until Close: every interval, a heartbeat to the other side of each relay, and
// the end of those whose other side has been silent too long; now and then a NATS round trip.
func (n *Node) heartbeats() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	hb := AppendFrame(nil, Frame{Kind: KindHeartbeat})
	alive := encode(Alive{V: Version, Node: n.name})
	for k := 0; ; k++ {
		select {
		case <-n.quit:
			return
		case <-t.C:
		}
		_ = n.nc.Publish(aliveSubject, alive)
		now := time.Now().UnixNano()
		n.mu.Lock()
		pipes := make([]*pipe, 0, len(n.pipes))
		for p := range n.pipes {
			pipes = append(pipes, p)
		}
		n.mu.Unlock()
		for _, p := range pipes {
			_ = n.nc.Publish(p.out, hb)
			if time.Duration(now-p.heard.Load()) > n.cfg.HeartbeatTimeout {
				p.fail()
			}
		}
		if k%5 == 0 {
			if rtt, err := n.nc.RTT(); err == nil {
				n.rtt.Store(int64(rtt))
			}
		}
	}
}

// Route implements signaling.Router: this node serves room if it holds its lease or can take
// it (free, or expired); otherwise it relays to the live owner. An owner that does not answer is
// waited for until its lease expires, within ctx.
func (n *Node) Route(ctx context.Context, room signaling.RoomID) (signaling.Pipe, error) {
	var last error
	// The watcher's view first: a room another live node owns is relayed without a read of the
	// bucket (the owner refuses the relay if the lease has moved, and the bucket is read then).
	if l, ok := n.dir.Cached(room); ok && l.Node != n.name && l.Live(n.dir.Now()) {
		if r, err := n.open(ctx, l.Node, room); err == nil {
			return r, nil
		}
	}
	for {
		if n.dir.Owns(room) {
			n.touch(room)
			return nil, nil
		}
		l, err := n.dir.Acquire(ctx, room)
		switch {
		case err != nil:
			last = err
		case l.Node == n.name:
			n.touch(room)
			if n.cfg.Placement != nil {
				n.cfg.Placement.Poke()
			}
			return nil, nil
		default:
			r, err := n.open(ctx, l.Node, room)
			if err == nil {
				return r, nil
			}
			last = fmt.Errorf("owner %s of room %q: %w", l.Node, room, err)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: room %q: no node serves it now (%v)", signaling.ErrServerBusy, room, last)
		}
	}
}

// touch records that a join came for room: its lease is kept at least a TTL from now.
func (n *Node) touch(room signaling.RoomID) {
	n.mu.Lock()
	n.acquired[room] = time.Now()
	n.mu.Unlock()
}

// Touch records that room's lease was taken for a host of this process that has not joined yet
// (a world's region host, server/world.go): the lease is kept at least a TTL from now.
func (n *Node) Touch(room signaling.RoomID) { n.touch(room) }

// Recent reports whether a join came for room within the lease TTL (it may not be open yet).
func (n *Node) Recent(room signaling.RoomID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.acquired[room]
	if ok && time.Since(at) > n.dir.TTL() {
		delete(n.acquired, room)
		return false
	}
	return ok
}

// open asks node to serve a relayed websocket of room and returns the edge's end of the relay.
func (n *Node) open(ctx context.Context, node string, room signaling.RoomID) (*pipe, error) {
	id := rand.Text()
	p := newPipe(n, upSubject(id))
	sub, err := n.nc.Subscribe(downSubject(id), p.deliver)
	if err != nil {
		return nil, err
	}
	p.sub = sub
	rctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, openSubject(node), encode(OpenRequest{V: Version, ID: id, Room: room, Edge: n.name}))
	if err == nil {
		var reply OpenReply
		if reply, err = DecodeOpenReply(msg.Data); err != nil {
			n.refuse(err)
		} else if reply.Code != OpenOK {
			err = &OpenError{Node: node, Code: reply.Code, Reason: reply.Reason}
		}
	}
	if err == nil && !n.track(p) {
		err = signaling.ErrServerClosed
	}
	if err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	p.heard.Store(time.Now().UnixNano())
	return p, nil
}

// serveOpen answers an open request: if this node owns the room it serves the relayed websocket.
func (n *Node) serveOpen(m *nats.Msg) {
	refuse := func(code OpenCode, reason string) {
		_ = m.Respond(encode(refusal(code, reason)))
	}
	req, err := DecodeOpenRequest(m.Data)
	if err != nil {
		n.refuse(err)
		code := OpenBadRequest
		if errors.Is(err, ErrVersion) {
			code = OpenVersion
		}
		refuse(code, err.Error())
		return
	}
	sig := n.sig.Load()
	if sig == nil {
		refuse(OpenClosing, "no signaling server")
		return
	}
	if !n.dir.Owns(req.Room) {
		refuse(OpenNotOwner, fmt.Sprintf("node %s does not own room %q", n.name, req.Room))
		return
	}
	p := newPipe(n, downSubject(req.ID))
	sub, err := n.nc.Subscribe(upSubject(req.ID), p.deliver)
	if err != nil {
		refuse(OpenInternal, err.Error())
		return
	}
	p.sub = sub
	if !n.track(p) {
		_ = sub.Unsubscribe()
		refuse(OpenClosing, "node closing")
		return
	}
	n.touch(req.Room)
	if err := m.Respond(encode(OpenReply{V: Version})); err != nil {
		_ = p.Close()
		return
	}
	n.owners.Add(1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.owners.Add(-1)
		sig.ServeRelayed(p, "relay:"+req.Edge) // closes p
		_ = p.Close()
	}()
}

// serveRooms answers a rooms request with this node's rooms.
func (n *Node) serveRooms(m *nats.Msg) {
	reply := RoomsReply{V: Version, Rooms: []signaling.RoomInfo{}}
	if sig := n.sig.Load(); sig != nil {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
		defer cancel()
		if rooms, err := sig.Rooms(ctx); err == nil {
			reply.Rooms = rooms
		}
	}
	_ = m.Respond(encode(reply))
}

// Rooms implements signaling.Router: this node's rooms and those of every other node that holds
// a live lease, asked at once; a room two nodes list (a lease that just moved) is given as the
// directory's owner lists it.
func (n *Node) Rooms(ctx context.Context) ([]signaling.RoomInfo, error) {
	sig := n.sig.Load()
	if sig == nil {
		return nil, signaling.ErrServerClosed
	}
	local, err := sig.Rooms(ctx)
	if err != nil {
		return nil, err
	}
	now := n.dir.Now()
	owner := map[signaling.RoomID]string{}
	nodes := map[string]bool{}
	for _, l := range n.dir.Leases() {
		if l.Live(now) {
			owner[l.Room] = l.Node
			if l.Node != n.name {
				nodes[l.Node] = true
			}
		}
	}
	var mu sync.Mutex
	all := append([]signaling.RoomInfo(nil), local...)
	var wg sync.WaitGroup
	for node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
			defer cancel()
			reply, err := n.nc.RequestWithContext(rctx, roomsSubject(node), nil)
			if err != nil {
				n.log.Debug().Err(err).Str("node", node).Msg("rooms of a node not listed")
				return
			}
			rs, err := DecodeRoomsReply(reply.Data)
			if err != nil {
				n.refuse(err)
				n.log.Warn().Err(err).Str("node", node).Msg("rooms of a node refused")
				return
			}
			mu.Lock()
			all = append(all, rs.Rooms...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.SortStableFunc(all, func(a, b signaling.RoomInfo) int { return cmp.Compare(a.Room, b.Room) })
	out := all[:0]
	for _, r := range all {
		if k := len(out); k > 0 && out[k-1].Room == r.Room {
			if owner[r.Room] == r.Node {
				out[k-1] = r
			}
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// collector reports the cluster metrics.
type collector struct{ n *Node }

var (
	descLeases = prometheus.NewDesc("concord_cluster_leases", "Live room leases in the directory, by owner node.", []string{"node"}, nil)
	descOwned  = prometheus.NewDesc("concord_cluster_owned_rooms", "Rooms whose lease this node holds.", nil, nil)
	descRelays = prometheus.NewDesc("concord_cluster_relays", "Relayed websockets open on this node, by side (edge: accepted here, owner: served here).", []string{"side"}, nil)
	descRTT    = prometheus.NewDesc("concord_cluster_nats_rtt_seconds", "The last measured round trip to the NATS server.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLeases
	ch <- descOwned
	ch <- descRelays
	ch <- descRTT
	ch <- descRefused
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	now := n.dir.Now()
	per := map[string]int{n.name: 0}
	for _, l := range n.dir.Leases() {
		if l.Live(now) {
			per[l.Node]++
		}
	}
	for node, k := range per {
		ch <- prometheus.MustNewConstMetric(descLeases, prometheus.GaugeValue, float64(k), node)
	}
	ch <- prometheus.MustNewConstMetric(descOwned, prometheus.GaugeValue, float64(len(n.dir.Held())))
	n.mu.Lock()
	eps := len(n.pipes)
	n.mu.Unlock()
	owners := n.owners.Load()
	ch <- prometheus.MustNewConstMetric(descRelays, prometheus.GaugeValue, float64(owners), "owner")
	ch <- prometheus.MustNewConstMetric(descRelays, prometheus.GaugeValue, float64(max(0, int64(eps)-owners)), "edge")
	ch <- prometheus.MustNewConstMetric(descRTT, prometheus.GaugeValue, time.Duration(n.rtt.Load()).Seconds())
	n.refused.collect(ch)
}
