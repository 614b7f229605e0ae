package netlab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// The cluster scenarios (docs/protocol.md §7): three `concord serve` nodes in the lab's node namespaces
// (100.64.0.31-33, netlab.Lab.Nodes), clustered through their embedded nats-servers, each with its
// own data directory under the lab's TempDir; the bots are peers of this test process, which runs
// in the lab's Public namespace, and know the three node URLs.

// clusterSecret is every node's CONCORD_SECRET: resume tokens are keyed by it, so a member resumes
// on any node.
const clusterSecret = "netlab cluster secret, 32 bytes+"

// clusterAdminKey is every node's CONCORD_ADMIN_KEY: with a secret, /api/rooms lists every room
// only for it.
const clusterAdminKey = "netlab-cluster-admin"

// clusterEnv is the environment of every node.
var clusterEnv = []string{"CONCORD_SECRET=" + clusterSecret, "CONCORD_ADMIN_KEY=" + clusterAdminKey}

// clusterFlags are the serve flags the cluster scenarios need; clusterReady skips naming those the
// binary lacks.
var clusterFlags = []string{"node-name", "cluster-name", "cluster", "routes", "scene", "data"}

// sceneFile is the Decentraland scene every room of the scenarios is seeded from (its dedicated
// host, placed on the room's owner node, writes its checkpoints).
var sceneFile, _ = filepath.Abs("../../../crdt/testdata/dcl/example-scene.crdt")

// clusterReady returns the concord binary, or skips t naming the serve flags it lacks (the cluster
// is built on branch cluster; these scenarios wait for it).
func clusterReady(t *testing.T) string {
	t.Helper()
	bin := concord(t)
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput()
	var missing []string
	for _, f := range clusterFlags {
		if !strings.Contains(string(out), "-"+f+" ") {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 {
		t.Skipf("skipping the cluster lab: concord serve has no %s yet (docs/protocol.md §7)", strings.Join(missing, ", "))
	}
	return bin
}

// clusterNode is one `concord serve` node of a lab cluster.
type clusterNode struct {
	i    int
	name string
	ns   netlab.NS
	url  string
	data string
	p    *proc
}

// labCluster is three nodes, their rooms and the bots of this process in those rooms.
type labCluster struct {
	t     *testing.T
	bin   string
	nodes []*clusterNode
	rooms []string
	extra []string // serve flags of every node
	// seen maps room → peer index → peer id of every member /api/rooms ever listed: an index
	// held by two identities is a reused index.
	mu   sync.Mutex
	seen map[string]map[int]string
	// broken rooms have a corrupted checkpoint: they must stay closed, and converged skips them.
	broken map[string]bool
}

// newLabCluster prepares (does not start) nodes (1 to 3) whose rooms are named rooms, each seeded
// from sceneFile, with fresh data directories.
func newLabCluster(t *testing.T, lab *netlab.Lab, bin string, nodes int, rooms []string) *labCluster {
	t.Helper()
	c := &labCluster{t: t, bin: bin, rooms: rooms, seen: map[string]map[int]string{}}
	// Fresh even when the test runs again in the same lab (-count): a directory of its own.
	if err := os.MkdirAll(lab.TempDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(lab.TempDir(), strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	for i, ns := range lab.Nodes[:nodes] {
		addr := netlab.NodeAddr(i).String()
		n := &clusterNode{i: i, name: fmt.Sprintf("n%d", i+1), ns: ns, url: "http://" + addr + ":7880", data: filepath.Join(base, fmt.Sprintf("n%d", i+1))}
		if err := os.MkdirAll(n.data, 0o700); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	c.extra = []string{"--dedicated-host=false", "--checkpoint-interval", labCheckpointInterval(), "--log-level", labLogLevel(), "--max-conns-per-addr", "1000"}
	for _, r := range rooms {
		c.extra = append(c.extra, "--scene", r+"="+sceneFile)
	}
	return c
}

// args are node i's serve flags: its address, data, name, and routes to the two others.
func (c *labCluster) args(i int) []string {
	addr := netlab.NodeAddr(i).String()
	var routes []string
	for j := range c.nodes {
		if j != i {
			routes = append(routes, "nats-route://"+netlab.NodeAddr(j).String()+":6222")
		}
	}
	args := []string{"serve", "--addr", addr + ":7880", "--data", c.nodes[i].data,
		"--node-name", c.nodes[i].name, "--cluster-name", "lab", "--cluster", addr + ":6222"}
	if len(routes) > 0 {
		args = append(args, "--routes", strings.Join(routes, ","))
	}
	return append(args, c.extra...)
}

// start starts the given nodes (all if none) at once, as a cluster must (JetStream needs a quorum),
// and waits until each answers /healthz.
func (c *labCluster) start(which ...int) {
	c.t.Helper()
	if len(which) == 0 {
		for i := range c.nodes {
			which = append(which, i)
		}
	}
	for _, i := range which {
		n := c.nodes[i]
		n.p = startEnv(c.t, n.ns, clusterEnv, "serve-"+n.name, c.bin, c.args(i)...)
	}
	for _, i := range which {
		c.nodes[i].p.waitHealthy(c.t, c.nodes[i].url, 60*time.Second)
	}
}

// stop stops every running node with SIGTERM (a graceful stop: dedicated hosts write their last
// checkpoint), all at once.
func (c *labCluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.p != nil && !n.p.exited() {
			wg.Add(1)
			go func() { defer wg.Done(); n.p.stop() }()
		}
	}
	wg.Wait()
}

// urls is the list of the node URLs starting at node first, as the bots get it.
func (c *labCluster) urls(first int) string {
	var out []string
	for k := range c.nodes {
		out = append(out, c.nodes[(first+k)%len(c.nodes)].url)
	}
	return strings.Join(out, ",")
}

// clusterRoom is a room of GET /api/rooms on a cluster node.
type clusterRoom struct {
	room
	Node string `json:"node"`
}

// roomsOf lists the rooms of the cluster as node i's /api/rooms says.
func (c *labCluster) roomsOf(i int) (map[string]*clusterRoom, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.nodes[i].url+"/api/rooms", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+clusterAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/api/rooms: status %d", c.nodes[i].url, resp.StatusCode)
	}
	var rooms []*clusterRoom
	if err := json.NewDecoder(resp.Body).Decode(&rooms); err != nil {
		return nil, err
	}
	out := map[string]*clusterRoom{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rooms {
		out[r.Room] = r
		book := c.seen[r.Room]
		if book == nil {
			book = map[int]string{}
			c.seen[r.Room] = book
		}
		for _, m := range r.Members {
			if id, ok := book[m.PeerIndex]; ok && id != m.PeerID {
				c.t.Errorf("room %s: peer index %d reused: held by %s, now by %s", r.Room, m.PeerIndex, id, m.PeerID)
			}
			book[m.PeerIndex] = m.PeerID
		}
	}
	return out, nil
}

// converged waits until node i lists every room of the cluster owned by a live node (not in
// dead), each with want members (the dedicated host included) synced in the room's term with one
// replica hash (any hashes while the bots are moving), under a synced dedicated host, and check
// (if set) holds for each; it returns the rooms.
func (c *labCluster) converged(i, want int, moving bool, d time.Duration, dead map[string]bool, check func(*clusterRoom) error) map[string]*clusterRoom {
	c.t.Helper()
	var out map[string]*clusterRoom
	waitFor(c.t, d, fmt.Sprintf("every room converged with %d members (as %s sees them)", want, c.nodes[i].name), func() error {
		rooms, err := c.roomsOf(i)
		if err != nil {
			return err
		}
		var bad []string
		for _, name := range c.rooms {
			r := rooms[name]
			if c.broken[name] {
				continue
			}
			if err := roomConverged(r, want, moving, dead); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			if check != nil {
				if err := check(r); err != nil {
					bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				}
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d rooms not there yet, first: %s", len(bad), len(c.rooms), bad[0])
		}
		out = rooms
		return nil
	})
	return out
}

func roomConverged(r *clusterRoom, want int, moving bool, dead map[string]bool) error {
	if r == nil {
		return errors.New("not listed")
	}
	if r.Node == "" || dead[r.Node] {
		return fmt.Errorf("owner node %q", r.Node)
	}
	h := r.hostMember()
	if h == nil || h.Kind != "host" || len(r.Members) != want {
		return fmt.Errorf("on %s: %v", r.Node, &r.room)
	}
	hashes := map[string]bool{}
	for _, m := range r.Members {
		if !m.Synced || m.Replica == nil || m.Replica.Term != r.Term {
			return fmt.Errorf("on %s: %v", r.Node, &r.room)
		}
		hashes[m.Replica.Hash] = true
	}
	if len(hashes) != 1 && !moving {
		return fmt.Errorf("on %s: replicas differ: %v", r.Node, &r.room)
	}
	return nil
}

// clusterBot is an arena bot of this process in one room of the cluster.
type clusterBot struct {
	room string
	p    *peer.Peer
	app  *migrationcheck.Bot
}

// startBot runs a bot in room through the node list starting at node first, until ctx ends.
func (c *labCluster) startBot(ctx context.Context, wg *sync.WaitGroup, room string, first int, seed uint64, clk *migrationcheck.Clock) *clusterBot {
	c.t.Helper()
	app := &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: seed, MoveFor: time.Hour, Now: clk.Now}})}
	return &clusterBot{room: room, p: startClusterPeer(c.t, ctx, wg, c.urls(first), room, "bot-"+room, app), app: app}
}

// startClusterPeer runs a member of room with the node list servers, until ctx ends. Its sockets
// are this process's, in the Public namespace; ICE gathers on the lab address only.
func startClusterPeer(t *testing.T, ctx context.Context, wg *sync.WaitGroup, servers, room, user string, app peer.App) *peer.Peer {
	t.Helper()
	tok, err := signaling.IssueToken([]byte(clusterSecret), signaling.Claims{Room: signaling.RoomID(room), User: user, Kind: signaling.KindBot, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel).With().Str("who", user).Logger()
	p, err := peer.New(peer.Config{
		Server: servers, Room: room, User: user, Kind: signaling.KindBot, Token: tok, App: app,
		ICE:    peer.ICEAny,
		Link:   link.Config{Logger: log, UDPMuxAddr: net.JoinHostPort(netlab.PublicAddr.String(), "0")},
		Logger: log, ReportInterval: 200 * time.Millisecond, DigestInterval: 250 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runPeer(t, ctx, wg, user, p)
	return p
}

// views reads every bot's replica at once.
func botViews(ctx context.Context, bots []*clusterBot) (map[string]*migrationcheck.View, error) {
	lb := make([]*labBot, len(bots))
	for i, b := range bots {
		lb[i] = &labBot{p: b.p, app: b.app}
	}
	vs, err := readViews(ctx, lb)
	if err != nil {
		return nil, err
	}
	out := map[string]*migrationcheck.View{}
	for i, b := range bots {
		out[b.room] = vs[i]
	}
	return out, nil
}

func roomNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("r%02d", i+1))
	}
	return out
}

// sceneEntities is how many live entities the example scene has.
func sceneEntities(t *testing.T) int {
	t.Helper()
	st := sceneStateJSON(t)
	live := map[uint32]bool{}
	for _, r := range st.LWW {
		if !r.Deleted {
			live[r.Entity] = true
		}
	}
	return len(live)
}

func sceneStateJSON(t *testing.T) crdt.StateJSON {
	t.Helper()
	b, err := os.ReadFile(strings.TrimSuffix(sceneFile, ".crdt") + ".state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st crdt.StateJSON
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// clusterRooms is the number of rooms of the cluster scenarios (30).
const clusterRooms = 30

// open starts every node and waits until each room is open under its dedicated host; it returns
// how many rooms each node owns.
func (c *labCluster) open(d time.Duration) map[string]int {
	c.t.Helper()
	c.start()
	c.converged(0, 1, false, d, nil, nil)
	rs, err := c.roomsOf(0)
	if err != nil {
		c.t.Fatal(err)
	}
	owned := map[string]int{}
	for _, r := range rs {
		if slices.Contains(c.rooms, r.Room) {
			owned[r.Node]++
		}
	}
	return owned
}

// startBots starts one bot per room, the k-th with the node list starting at node k mod n, and
// waits until every room has converged with it as every node sees it.
func (c *labCluster) startBots(ctx context.Context, wg *sync.WaitGroup, clk *migrationcheck.Clock, d time.Duration) []*clusterBot {
	c.t.Helper()
	var bots []*clusterBot
	for k, r := range c.rooms {
		bots = append(bots, c.startBot(ctx, wg, r, k%len(c.nodes), uint64(k+1), clk))
	}
	for i := range c.nodes {
		c.converged(i, 2, true, d, nil, nil)
	}
	return bots
}

// offOwner counts the bots whose signaling goes through a node that does not own their room.
func (c *labCluster) offOwner(bots []*clusterBot) int {
	c.t.Helper()
	rs, err := c.roomsOf(0)
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, b := range bots {
		if r := rs[b.room]; r != nil && !strings.HasPrefix(b.p.Status().Server, "http://"+netlab.NodeAddr(nodeIndex(r.Node)).String()+":") {
			n++
		}
	}
	return n
}

// failover is what killing a node measured.
type failover struct {
	victim, survivor *clusterNode
	recovered        time.Duration // kill → every room converged on the survivors
	violations       int
	// kept is how many rooms of the surviving nodes kept their node and term through the kill, of
	// stayed (a survivor's room moved only because the lease expired while JetStream elected a
	// leader, which the directory now waits out: durable/directory.go).
	kept, stayed int
	// final is each room's converged replica (a bot's), avatars each bot's avatar entity.
	final   map[string]*migrationcheck.View
	avatars map[string]peer.Entity
}

// killBusiest SIGKILLs the node owning the most rooms (owned) while the bots move, waits until
// every room has converged on the survivors (the bots' replicas equal to their hosts', none of
// them through the dead node), and checks the migration invariant in every room: nothing any bot
// held at the kill is lost or older, every bot's avatar where it last put it. The bots have stopped
// moving when it returns.
func (c *labCluster) killBusiest(ctx context.Context, bots []*clusterBot, clk *migrationcheck.Clock, owned map[string]int, d time.Duration) failover {
	c.t.Helper()
	f := failover{victim: c.nodes[0]}
	for _, n := range c.nodes {
		if owned[n.name] > owned[f.victim.name] {
			f.victim = n
		}
	}
	f.survivor = c.nodes[(f.victim.i+1)%len(c.nodes)]
	before, err := c.roomsOf(f.survivor.i)
	if err != nil {
		c.t.Fatal(err)
	}
	time.Sleep(time.Second) // the bots move
	f.victim.p.kill9()
	killed := time.Now()
	rec, err := botViews(ctx, bots)
	if err != nil {
		c.t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // they move on through the failover
	clk.Jump(10 * time.Hour)
	dead := map[string]bool{f.victim.name: true}
	var final map[string]*migrationcheck.View
	var after map[string]*clusterRoom
	waitFor(c.t, d, "every room converged on the survivors, each bot's replica equal to its host's", func() error {
		rs, err := c.roomsOf(f.survivor.i)
		if err != nil {
			return err
		}
		after = rs
		var bad []string
		for _, name := range c.rooms {
			if err := roomConverged(rs[name], 2, false, dead); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d rooms not there yet, first: %s", len(bad), len(c.rooms), bad[0])
		}
		if final, err = botViews(ctx, bots); err != nil {
			return err
		}
		for _, b := range bots {
			st := b.p.Status()
			want := rs[b.room].hostMember().Replica.Hash
			if fmt.Sprintf("%016x", final[b.room].Hash) != want || !st.Signaling || strings.HasPrefix(st.Server, f.victim.url) {
				return fmt.Errorf("%s: bot hash %016x signaling %v via %s; host hash %s", b.room, final[b.room].Hash, st.Signaling, st.Server, want)
			}
		}
		return nil
	})
	f.recovered = time.Since(killed)
	for _, name := range c.rooms {
		b, a := before[name], after[name]
		if b == nil || b.Node == f.victim.name {
			continue
		}
		f.stayed++
		if a.Node == b.Node && a.Term == b.Term {
			f.kept++
		} else {
			c.t.Errorf("room %s of surviving node %s moved: now on %s, term %d → %d", name, b.Node, a.Node, b.Term, a.Term)
		}
	}
	f.final, f.avatars = final, map[string]peer.Entity{}
	for _, b := range bots {
		if err := b.p.Do(ctx, func(w *peer.World) { f.avatars[b.room], _ = w.AvatarOf(w.Self()) }); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, b := range bots {
		vs := migrationcheck.Check(rec[b.room], final[b.room], func(peer.Entity) bool { return false })
		self := b.p.Status().Self
		if want := b.app.Wrote(); want != nil && string(final[b.room].Avatars[self]) != string(want) {
			vs = append(vs, fmt.Sprintf("the bot's avatar is at %v, it last wrote %v", arena.ParseVec(final[b.room].Avatars[self]), arena.ParseVec(want)))
		}
		for _, v := range vs {
			c.t.Errorf("room %s: invariant violated: %s", b.room, v)
		}
		f.violations += len(vs)
	}
	return f
}

// TestLab8Cluster is the multi-node scenarios of docs/protocol.md §7, in order on one cluster of three nodes
// whose 30 rooms are seeded from the example scene (each room's dedicated host runs on its owner
// node and writes its checkpoints):
//
//	(a) one bot per room, each joining through a different first node, so that many members
//	    reach their room through a node that does not own it: every room converges;
//	(b) the node owning the most rooms is SIGKILLed while the bots move: every room converges on
//	    the survivors, with the migration invariant intact and no peer index reused (labCluster
//	    checks every /api/rooms it reads);
//	(c) the bots leave, the whole cluster stops and starts again (the killed node too): every
//	    room comes back from its checkpoint, and a new member of each finds everything the room's
//	    bot last held (the invariant again; only the bot's avatar, deleted when it left, may go);
//	(d) a room holds the state @dcl/ecs computes for the scene it was seeded from;
//	(e) a room whose checkpoint was corrupted before the restart stays closed, a node says why
//	    (the room, the checkpoint's place and the byte offset), and the other rooms open.
func TestLab8Cluster(t *testing.T) {
	lab := netlab.Get(t)
	bin := clusterReady(t)
	rooms := roomNames(clusterRooms)
	c := newLabCluster(t, lab, bin, netlab.Nodes, rooms)
	begin := time.Now()
	owned := c.open(120 * time.Second)
	t.Logf("3 nodes up, %d rooms open under their dedicated hosts %v after the start; rooms per node %v", len(rooms), time.Since(begin).Round(time.Millisecond), owned)

	// (a) One bot per room, spread over the nodes.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	clk := &migrationcheck.Clock{}
	joined := time.Now()
	bots := c.startBots(ctx, &wg, clk, 120*time.Second)
	off := c.offOwner(bots)
	t.Logf("(a) %d bots in %d rooms converged %v after they started; %d of them joined through a node that does not own their room",
		len(bots), len(rooms), time.Since(joined).Round(time.Millisecond), off)
	if off == 0 {
		t.Errorf("no member reached its room through another node: the relay path went untested")
	}

	// (b) Kill the node that owns the most rooms while the bots move.
	f := c.killBusiest(ctx, bots, clk, owned, 180*time.Second)
	t.Logf("(b) %s (owner of %d rooms) SIGKILLed: every room converged on the survivors %v after the kill; invariant checked in %d rooms, %d violations; %d of the surviving nodes' %d rooms kept their node and term",
		f.victim.name, owned[f.victim.name], f.recovered.Round(time.Millisecond), len(bots), f.violations, f.kept, f.stayed)

	// (c) The bots leave; the whole cluster restarts with nobody online.
	cancel()
	wg.Wait()
	c.converged(f.survivor.i, 1, false, 60*time.Second, map[string]bool{f.victim.name: true}, nil)
	// (e) One room's checkpoint is corrupted while the cluster runs; it is read at the restart.
	broken := rooms[1]
	c.corruptCheckpoint(broken)
	c.stop()
	restart := time.Now()
	c.start()
	c.converged(0, 1, false, 180*time.Second, nil, nil)
	reopened := time.Since(restart)
	// A viewer per room: each finds everything its room's bot last held, newer or equal, but the
	// bot's avatar (deleted when it left).
	vctx, vcancel := context.WithCancel(context.Background())
	var vwg sync.WaitGroup
	defer func() { vcancel(); vwg.Wait() }()
	viewers := map[string]*peer.Peer{}
	for k, r := range rooms {
		if r != broken {
			viewers[r] = startClusterPeer(t, vctx, &vwg, c.urls(k%len(c.nodes)), r, "viewer-"+r, arena.New(arena.Config{}))
		}
	}
	restored := map[string]*migrationcheck.View{}
	waitFor(t, 120*time.Second, "every viewer synced", func() error {
		for r, v := range viewers {
			if restored[r] != nil {
				continue
			}
			if st := v.Status(); !st.Synced {
				return fmt.Errorf("%s: viewer not synced: %+v", r, st)
			}
			if err := v.Do(vctx, func(w *peer.World) { restored[r] = migrationcheck.Read(w) }); err != nil {
				return err
			}
		}
		return nil
	})
	lost := 0
	for r, v := range restored {
		avatar := f.avatars[r]
		for _, msg := range migrationcheck.Check(f.final[r], v, func(e peer.Entity) bool { return e == avatar }) {
			t.Errorf("room %s after the restart: %s", r, msg)
			lost++
		}
	}
	t.Logf("(c) whole cluster restarted with nobody online: all %d other rooms reopened from their checkpoints %v after the start; their viewers hold everything the bots last held (%d violations)",
		len(rooms)-1, reopened.Round(time.Millisecond), lost)
	var why string
	waitFor(t, 30*time.Second, "a node to say why "+broken+" stays closed", func() error {
		for _, n := range c.nodes {
			for _, l := range strings.Split(n.p.out.String(), "\n") {
				if strings.Contains(l, broken) && strings.Contains(l, "byte offset") {
					why = n.name + ": " + l
					return nil
				}
			}
		}
		return errors.New("no node logged it")
	})
	rs, err := c.roomsOf(0)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[broken]; r != nil && r.hostMember() != nil && r.hostMember().Kind == "host" {
		t.Errorf("room %s opened under a dedicated host from a corrupted checkpoint: %v", broken, &r.room)
	}
	t.Logf("(e) %s's checkpoint truncated: the room stays closed, the other rooms opened; %s", broken, why)

	// (d) The viewer of the first room holds the scene as @dcl/ecs computes it.
	scene := sceneStateJSON(t)
	waitFor(t, 60*time.Second, "the viewer holds the scene", func() error {
		var err error
		if e := viewers[rooms[0]].Do(vctx, func(w *peer.World) { err = migrationcheck.HoldsState(w.Replica().StateJSON(), scene) }); e != nil {
			return e
		}
		return err
	})
	t.Logf("(d) room %s holds the %d entities of the example scene as @dcl/ecs computes them", rooms[0], sceneEntities(t))
}

// nodeIndex is the index of node name nI (n1 → 0).
func nodeIndex(name string) int {
	var i int
	_, _ = fmt.Sscanf(name, "n%d", &i)
	return i - 1
}

// corruptCheckpoint stores a truncated copy of room's last checkpoint as its newest checkpoint, in
// a term far ahead (so that no host of the room overwrites it), and marks the room broken. It
// reaches the cluster's JetStream as an operator's tool would: a nats-server of this process joins
// the cluster's routes (without JetStream) with the route password, and a client of it publishes
// to the checkpoint subject (docs/protocol.md: the checkpoint format).
func (c *labCluster) corruptCheckpoint(room string) {
	c.t.Helper()
	ns, nc := c.routeServer("lab-tool", url.UserPassword(durable.RouteUser, durable.RouteSecret([]byte(clusterSecret))))
	defer ns.Shutdown() // before the nodes restart
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last *jetstream.RawStreamMsg
	waitFor(c.t, 30*time.Second, "the cluster's checkpoint of "+room+" through a route of the tool", func() error {
		st, err := js.Stream(ctx, durable.CheckpointStream)
		if err != nil {
			return err
		}
		last, err = st.GetLastMsgForSubject(ctx, durable.CheckpointSubject(signaling.RoomID(room)))
		return err
	})
	term, _ := strconv.ParseUint(last.Header.Get("Concord-Term"), 10, 64)
	msg := &nats.Msg{Subject: last.Subject, Data: last.Data[:len(last.Data)-3], Header: nats.Header{}}
	for k, v := range last.Header {
		// Not the stored publish's own JetStream checks (Nats-Expected-Last-Subject-Sequence):
		// they would make this publish a revision check against a sequence long gone.
		if !strings.HasPrefix(k, "Nats-") {
			msg.Header[k] = v
		}
	}
	msg.Header.Set("Concord-Term", strconv.FormatUint(term+1000, 10))
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		c.t.Fatalf("storing a truncated checkpoint of %s: %v", room, err)
	}
	if c.broken == nil {
		c.broken = map[string]bool{}
	}
	c.broken[room] = true
}

// routeServer starts a nats-server of this process (in the lab's Public namespace) whose routes go
// to every node with the credentials user (nil: none), and returns it with a connection to it; both
// end with the test.
func (c *labCluster) routeServer(name string, user *url.Userinfo) (*server.Server, *nats.Conn) {
	c.t.Helper()
	var routes []*url.URL
	for i := range c.nodes {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: netlab.NodeAddr(i).String() + ":6222", User: user})
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: name, Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
		Cluster: server.ClusterOpts{Name: "lab", Host: netlab.PublicAddr.String(), Port: server.RANDOM_PORT},
		Routes:  routes,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	ns.Start()
	c.t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("nats-server %s did not start", name)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return ns, nc
}

// routedNodes lists the nodes ns has a route to.
func routedNodes(t *testing.T, ns *server.Server) []string {
	t.Helper()
	rz, err := ns.Routez(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rz.Routes {
		if !slices.Contains(out, r.RemoteName) {
			out = append(out, r.RemoteName)
		}
	}
	slices.Sort(out)
	return out
}

// TestLab8ClusterStranger (docs/security.md §7): three nodes clustered with the route password
// derived from their CONCORD_SECRET; on the cluster's network, a stranger nats-server that routes
// to every node without the password, and one with a guessed password, form no route and read
// none of the cluster's subjects (checkpoints, relayed joins), while a server with the password
// (the control: the same network, the same ports) routes to all three and reads the checkpoints
// the rooms' dedicated hosts write. Before route authorization the strangers joined the routes,
// read the checkpoints and join frames, and could fence rooms and steal leases.
func TestLab8ClusterStranger(t *testing.T) {
	lab := netlab.Get(t)
	bin := clusterReady(t)
	c := newLabCluster(t, lab, bin, netlab.Nodes, roomNames(2))
	c.open(120 * time.Second)
	var mu sync.Mutex
	got := map[string]int{}
	servers := map[string]*server.Server{}
	for name, user := range map[string]*url.Userinfo{
		"stranger-none":    nil,
		"stranger-guessed": url.UserPassword(durable.RouteUser, "guessed"),
		"friend":           url.UserPassword(durable.RouteUser, durable.RouteSecret([]byte(clusterSecret))),
	} {
		ns, nc := c.routeServer(name, user)
		servers[name] = ns
		if _, err := nc.Subscribe("concord.>", func(*nats.Msg) { mu.Lock(); got[name]++; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "the friend routed to every node and reading checkpoints", func() error {
		if r := routedNodes(t, servers["friend"]); len(r) != len(c.nodes) {
			return fmt.Errorf("friend routed to %v", r)
		}
		mu.Lock()
		defer mu.Unlock()
		if got["friend"] == 0 {
			return errors.New("the friend has read nothing yet")
		}
		return nil
	})
	// The strangers started with the friend and try every route at the same pace: by now each
	// has been refused by every node.
	for _, name := range []string{"stranger-none", "stranger-guessed"} {
		if r := routedNodes(t, servers[name]); len(r) != 0 || servers[name].NumRoutes() != 0 {
			t.Errorf("%s routed to %v", name, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got["stranger-none"] != 0 || got["stranger-guessed"] != 0 {
		t.Errorf("strangers read cluster subjects: %v", got)
	}
	t.Logf("the friend routed to %v and read %d messages; the strangers routed nowhere and read nothing (%v)", routedNodes(t, servers["friend"]), got["friend"], got)
}

// labLogLevel is the nodes' log level: debug when CONCORD_LAB_DUMP names a directory for their
// whole output (a debugging aid), else warn.
func labLogLevel() string {
	if os.Getenv("CONCORD_LAB_DUMP") != "" {
		return "debug"
	}
	return "warn"
}

// labCheckpointInterval is the nodes' --checkpoint-interval: 1s (three times serve's default, to
// exercise the writer), or CONCORD_LAB_CHECKPOINT_INTERVAL (a measurement at the default: 3s).
func labCheckpointInterval() string {
	if d, err := time.ParseDuration(os.Getenv("CONCORD_LAB_CHECKPOINT_INTERVAL")); err == nil && d > 0 {
		return d.String()
	}
	return "1s"
}
