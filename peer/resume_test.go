package peer_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// The tests in this file take the signaling server away from a playing room (its listener and
// every connection closed without a close frame, as a crashed process leaves them) and bring a
// new server up on the same address, which knows nothing of the room: the peers redial and
// resume their indices, and the room's state survives.

// outageServer is a signaling server that can crash and restart on one loopback address.
type outageServer struct {
	t    *testing.T
	cfg  signaling.Config
	addr string

	srv   *signaling.Server
	hs    *http.Server
	ln    net.Listener
	serve sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns map[net.Conn]bool
	dead  *atomic.Bool // set by crash: every connection of this run fails at once
	// slow makes crash close the connections one by one while the hub still runs, as a
	// network failure seen by a live server does: it elects and announces as they go.
	slow bool
}

// severable is a server connection that stops working, both ways, the moment dead is set: the
// hub of a crashing server must not get a word out after the crash (it would elect new hosts
// as it sees the sockets go, and tell the members whose sockets it has not lost yet).
type severable struct {
	net.Conn
	dead *atomic.Bool
}

func (c severable) Read(b []byte) (int, error) {
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c severable) Write(b []byte) (int, error) {
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

type severableListener struct {
	net.Listener
	dead *atomic.Bool
}

func (l severableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return severable{Conn: c, dead: l.dead}, nil
}

func newOutageServer(t *testing.T, cfg signaling.Config) *outageServer {
	o := &outageServer{t: t, cfg: cfg, addr: "127.0.0.1:0"}
	o.start()
	t.Cleanup(o.crash)
	return o
}

func (o *outageServer) url() string { return "http://" + o.addr }

// start runs a fresh server on the address (the first time, on a free port).
func (o *outageServer) start() {
	o.t.Helper()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		o.t.Fatalf("listen on %s: %v", o.addr, err)
	}
	o.addr = ln.Addr().String()
	o.dead = new(atomic.Bool)
	o.ln = severableListener{Listener: ln, dead: o.dead}
	o.conns = make(map[net.Conn]bool)
	o.srv = signaling.New(o.cfg)
	o.hs = &http.Server{
		Handler: o.srv.Handler(),
		ConnState: func(c net.Conn, s http.ConnState) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if s == http.StateNew {
				o.conns[c] = true
			}
		},
	}
	o.serve.Add(1)
	go func() {
		defer o.serve.Done()
		_ = o.hs.Serve(o.ln)
	}()
}

// crash closes the listener and every connection at once, then stops the server.
func (o *outageServer) crash() {
	if o.srv == nil {
		return
	}
	if !o.slow {
		o.dead.Store(true)
	}
	_ = o.ln.Close()
	o.mu.Lock()
	for c := range o.conns {
		_ = c.Close()
	}
	o.mu.Unlock()
	_ = o.srv.Close()
	_ = o.hs.Close()
	o.serve.Wait()
	o.srv = nil
}

func (o *outageServer) rooms() []signaling.RoomInfo {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := o.srv.Rooms(ctx)
	if err != nil {
		o.t.Fatal(err)
	}
	return rs
}

// newOutageRoom is a migRoom whose signaling server can crash and restart.
func newOutageRoom(t *testing.T, seed uint64) (*migRoom, *outageServer) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	o := newOutageServer(t, signaling.Config{
		Logger: log.With().Str("who", "signaling").Logger(),
		Rooms:  map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}},
	})
	r := &migRoom{t: t, url: o.url(), tr: &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: seed}}, log: log}
	r.configure = func(c *peer.Config) {
		c.RedialMin, c.RedialMax = 50*time.Millisecond, 500*time.Millisecond
	}
	t.Cleanup(func() {
		for _, p := range r.peers {
			p.cancel()
		}
		r.wg.Wait()
	})
	return r, o
}

// waitSignaling waits until every peer's signaling is up (or down).
func waitSignaling(r *migRoom, peers []*migPeer, up bool) {
	r.t.Helper()
	poll.Until(r.t, 20*time.Second, fmt.Sprintf("signaling up=%v on every peer", up), func() error {
		for _, p := range peers {
			if st := p.Status(); st.Signaling != up || st.ResumeRefused != "" {
				return fmt.Errorf("%s: signaling %v, resumes %d, refused %q", p.name, st.Signaling, st.Resumes, st.ResumeRefused)
			}
		}
		return nil
	})
}

func indices(peers []*migPeer) []peer.PeerIndex {
	var out []peer.PeerIndex
	for _, p := range peers {
		out = append(out, p.Status().Self)
	}
	return out
}

// checkRoom checks that the server's room has exactly the members want, with host and term.
func checkRoom(o *outageServer, want []peer.PeerIndex, term peer.Term, host peer.PeerIndex) error {
	rs := o.rooms()
	if len(rs) != 1 {
		return fmt.Errorf("%d rooms", len(rs))
	}
	var got []peer.PeerIndex
	for _, m := range rs[0].Members {
		got = append(got, m.PeerIndex)
	}
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) || rs[0].Term != term || rs[0].Host != host {
		return fmt.Errorf("room: members %v term %d host %d; want members %v term %d host %d", got, rs[0].Term, rs[0].Host, want, term, host)
	}
	return nil
}

// TestResumeHostSurvivesOutage: the signaling server crashes while the room plays and a new one
// starts on the same address. Every peer resumes with its index; the host is host again in the
// same term (no migration, no new snapshot), and nothing is lost.
func TestResumeHostSurvivesOutage(t *testing.T) {
	r, o := newOutageRoom(t, 51)
	h, bots := startRoom(r, 4, 500)
	all := append([]*migPeer{h}, bots...)
	r.play(400 * time.Millisecond)
	before := h.Status()
	idx := indices(all)

	o.crash()
	waitSignaling(r, all, false)
	rec := r.record(all)
	r.play(500 * time.Millisecond) // the room plays on over its links
	rec.Absorb(r.record(all))
	start := time.Now()
	o.start()
	waitSignaling(r, all, true)
	t.Logf("outage over: every peer resumed %v after the new server started", time.Since(start).Round(time.Millisecond))

	if got := indices(all); !slices.Equal(got, idx) {
		t.Fatalf("peer indices after the outage %v, want %v", got, idx)
	}
	poll.Until(t, 10*time.Second, "the new server knows the room as it was", func() error {
		return checkRoom(o, idx, before.Term, before.Self)
	})
	r.pause()
	final := convergeSame(r, all, before.Term, before.Self)
	for _, p := range all {
		if st := p.Status(); st.Resumes != 1 || st.Term != before.Term || st.Host != before.Self {
			t.Errorf("%s: resumes %d term %d host %d, want 1 resume, term %d host %d", p.name, st.Resumes, st.Term, st.Host, before.Term, before.Self)
		}
	}
	for _, ev := range h.app.log() {
		if ev.kind == peer.EventHostChanged && ev.term != before.Term {
			t.Errorf("the host saw a host change in term %d", ev.term)
		}
	}
	for _, b := range bots {
		for _, ev := range b.app.log() {
			if ev.term > before.Term {
				t.Errorf("%s saw %v in term %d: a migration", b.name, ev.kind, ev.term)
			}
		}
	}
	r.check("signaling outage, host alive", rec, final, nil)
	r.checkWrites("signaling outage, host alive", bots, final)
}

// TestResumeHostDiesDuringOutage: the signaling server crashes, then the host dies while it is
// down. slow=true: the server loses its sockets one by one while its hub still runs, electing and
// announcing new hosts to the members it still reaches (a member may become host on that dying
// view); nobody's avatar may be deleted for it, and the room must still converge. The members keep their replicas; when a new server starts they resume their indices, the
// server waits ResumeGrace for the host, then elects the earliest bot in a higher term, and the
// migration keeps everything a survivor held.
func TestResumeHostDiesDuringOutage(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("slow=%v", slow), func(t *testing.T) {
			testResumeHostDies(t, slow)
		})
	}
}

func testResumeHostDies(t *testing.T, slow bool) {
	r, o := newOutageRoom(t, 61)
	o.slow = slow
	h, bots := startRoom(r, 4, 600)
	r.play(400 * time.Millisecond)
	term := h.Status().Term
	idx := indices(bots)

	o.crash()
	waitSignaling(r, append([]*migPeer{h}, bots...), false)
	h.cancel()
	rec := r.record(bots)
	<-h.Done()
	r.play(500 * time.Millisecond) // members find their host link gone, without signaling
	rec.Absorb(r.record(bots))
	start := time.Now()
	o.start()
	waitSignaling(r, bots, true)
	t.Logf("every member resumed %v after the new server started", time.Since(start).Round(time.Millisecond))
	if got := indices(bots); !slices.Equal(got, idx) {
		t.Fatalf("peer indices after the outage %v, want %v", got, idx)
	}
	r.play(time.Second) // the bots move during the grace and the migration
	r.pause()
	final := r.converge(bots, term)
	t.Logf("new host %d in term %d, %v after the new server started", final.Host, final.Term, time.Since(start).Round(time.Millisecond))
	if final.Host != bots[0].Status().Self && !slow {
		t.Errorf("host %d, want the earliest bot %d", final.Host, bots[0].Status().Self)
	}
	if err := checkRoom(o, idx, final.Term, final.Host); err != nil {
		t.Error(err)
	}
	r.check("host died during a signaling outage", rec, final, nil)
	r.windowsOpened("host died during a signaling outage", bots)
	r.checkWrites("host died during a signaling outage", bots, final)
}

// TestResumeRefusedKeepsPlaying: the restarted server has another secret, so it refuses the
// peers' join tokens (and would refuse their resume tokens): a refusal for good. The peers play
// on over their links, report the refusal, and stop redialing.
func TestResumeRefusedKeepsPlaying(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	secret := []byte("first secret, thirty-two bytes!!")
	o := newOutageServer(t, signaling.Config{Logger: log, Secret: secret})
	r := &migRoom{t: t, url: o.url(), tr: &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: 71}}, log: log}
	t.Cleanup(func() {
		for _, p := range r.peers {
			p.cancel()
		}
		r.wg.Wait()
	})
	other := []byte("other secret, thirty-two bytes!!")
	tokens := map[string]string{}
	for _, u := range []string{"host", "bot0"} {
		tok, err := signaling.IssueToken(secret, signaling.Claims{Room: "arena", User: u, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		tokens[u] = tok
	}
	r.configure = func(c *peer.Config) {
		c.Token = tokens[c.User]
		c.RedialMin, c.RedialMax = 50*time.Millisecond, 200*time.Millisecond
	}
	h, bots := startRoom(r, 1, 700)
	all := append([]*migPeer{h}, bots...)
	before := h.Status()
	o.crash()
	o.cfg.Secret = other
	o.start()
	poll.Until(t, 20*time.Second, "every resume refused", func() error {
		for _, p := range all {
			if st := p.Status(); st.ResumeRefused == "" || st.Signaling {
				return fmt.Errorf("%s: signaling %v refused %q", p.name, st.Signaling, st.ResumeRefused)
			}
		}
		return nil
	})
	if rs := o.rooms(); len(rs) != 0 {
		t.Fatalf("rooms %+v after refused resumes", rs)
	}
	// The room still plays: the host's world reaches the bot over their link.
	var e peer.Entity
	if err := h.Do(context.Background(), func(w *peer.World) { e, _ = w.AvatarOf(bots[0].Status().Self) }); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the room converges without signaling", func() error {
		hs, bs := h.Status(), bots[0].Status()
		if hs.Hash != bs.Hash || hs.Term != before.Term || bs.Host != before.Self || !bs.Synced || e == 0 {
			return fmt.Errorf("host %016x term %d; bot %016x host %d synced %v", hs.Hash, hs.Term, bs.Hash, bs.Host, bs.Synced)
		}
		return nil
	})
	t.Logf("refused: %s", bots[0].Status().ResumeRefused)
}

// convergeSame waits until the peers follow host in term, synced, with equal replicas.
func convergeSame(r *migRoom, peers []*migPeer, term peer.Term, host peer.PeerIndex) *migView {
	r.t.Helper()
	var final *migView
	poll.Until(r.t, 30*time.Second, "the room converged in its old term", func() error {
		var views []*migView
		for _, p := range peers {
			st := p.Status()
			if !st.Synced || st.Term != term || st.Host != host {
				return fmt.Errorf("%s: synced %v term %d host %d, want term %d host %d", p.name, st.Synced, st.Term, st.Host, term, host)
			}
			v, err := r.view(p)
			if err != nil {
				return err
			}
			views = append(views, v)
		}
		for i, v := range views {
			if v.Hash != views[0].Hash {
				return fmt.Errorf("%s: hash %016x; %s: %016x", peers[i].name, v.Hash, peers[0].name, views[0].Hash)
			}
		}
		final = views[0]
		return nil
	})
	return final
}
