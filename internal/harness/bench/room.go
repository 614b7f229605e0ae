package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// pionLogger is the logger of the benchmark's pion stacks: quiet unless debugging, because closing
// hundreds of links logs harmless write errors.
func pionLogger(log zerolog.Logger) zerolog.Logger {
	if log.GetLevel() <= zerolog.DebugLevel {
		return log
	}
	return log.Level(zerolog.Disabled)
}

// signalingServer is an in-process signaling server on 127.0.0.1 whose bench room pins the bench
// host.
type signalingServer struct {
	url  string
	srv  *signaling.Server
	http *http.Server
	done chan struct{}
}

// startSignaling starts the server; with rel, it hands every member credentials for that relay.
func startSignaling(log zerolog.Logger, rel *relay) (*signalingServer, error) {
	var ice signaling.ICEServersFunc
	if rel != nil {
		ice = rel.iceServers
	}
	srv := signaling.New(signaling.Config{
		Logger:     log.With().Str("component", "signaling").Logger(),
		ICEServers: ice,
		Rooms:      map[signaling.RoomID]signaling.RoomConfig{room: {PinnedHosts: []signaling.Identity{hostUser}, MaxMembers: max(2*MaxBots, MaxIdleMembers+8)}},
		// A host that answers every member at once signals in a burst; keep the limits out of the way.
		SignalRate: 2000, SignalBurst: 4000, SendQueue: 4096,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	s := &signalingServer{url: "http://" + ln.Addr().String(), srv: srv, done: make(chan struct{}),
		http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

func (s *signalingServer) stop() {
	_ = s.srv.Close()
	_ = s.http.Close()
	<-s.done
}

// peerGroup runs in-process peers, each with its own link.API (one shared UDP mux cannot hold
// two live connections to the same remote address) and counting transport.
type peerGroup struct {
	url    string
	log    zerolog.Logger
	pion   zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error

	// reportInterval and digestInterval override the peers' defaults when not zero.
	reportInterval, digestInterval time.Duration
	standby, noStandby             bool // peer.Config.Standby, NoStandby (neither: the peer default)
	// relayOnly makes the members' links relay-only (peer.Config.RelayOnly); a peer started as
	// a dedicated host keeps its host candidates, so a link takes one trip through the relay.
	relayOnly bool
	deltas    bool // peer.Config.Deltas (it matters to the host only)

	// tickInterval, when not zero, overrides the peers' tick and network intervals.
	tickInterval time.Duration
	// trace, when set, stamps the phases of the links of the peers started next (LateJoin).
	trace *joinTrace
	// traces is each peer's trace, when Migration traces every member's links.
	traces []*joinTrace

	peers  []*peer.Peer
	probes []*probe
	trans  []*countingTransport
	apis   []*link.API
	// hostWire counts the UDP packets of the first host started in the group, or reads the
	// counts of remoteHost.
	hostWire interface{ counts() wireCounts }
	// remoteHost, when not nil, is the bench host process: the group holds only bots.
	remoteHost *hostProc
}

// firstBot is the index of the first bot in peers, probes and trans: 1 after the group's own
// host, 0 when the host is a process of its own.
func (g *peerGroup) firstBot() int {
	if g.remoteHost != nil {
		return 0
	}
	return 1
}

// wireCounts returns the host's packet counts (zero if not counted).
func (g *peerGroup) wireCounts() wireCounts {
	if g.hostWire == nil {
		return wireCounts{}
	}
	return g.hostWire.counts()
}

// hostCPU returns the CPU time the host process has used; 0 when the host is in this process.
func (g *peerGroup) hostCPU() time.Duration {
	if g.remoteHost == nil {
		return 0
	}
	d, err := procCPU(g.remoteHost.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return d
}

func newPeerGroup(ctx context.Context, url string, log zerolog.Logger) *peerGroup {
	ctx, cancel := context.WithCancel(ctx)
	return &peerGroup{url: url, log: log, pion: pionLogger(log), ctx: ctx, cancel: cancel,
		errs: make(chan error, 4*MaxBots)}
}

func (g *peerGroup) start(user string, kind signaling.Kind, a *app) (*peer.Peer, error) {
	cfg := link.Config{Logger: g.pion}
	if kind == signaling.KindHost && g.hostWire == nil {
		w, err := newWireCounter()
		if err != nil {
			return nil, err
		}
		g.hostWire, cfg.Net = w, w
	}
	api, err := link.NewAPI(cfg)
	if err != nil {
		return nil, err
	}
	ct := &countingTransport{inner: peer.PionTransport{API: api}}
	var tr peer.Transport = ct
	if g.trace != nil {
		tr = g.trace.wrap(ct)
	}
	p, err := peer.New(peer.Config{
		Server: g.url, Room: room, User: user, Kind: kind, App: a, Transport: tr,
		Logger:         g.log.With().Str("who", user).Logger(),
		ReportInterval: g.reportInterval, DigestInterval: g.digestInterval, Standby: g.standby, NoStandby: g.noStandby,
		TickInterval: g.tickInterval, NetworkInterval: g.tickInterval,
		RelayOnly: g.relayOnly && kind != signaling.KindHost,
		Deltas:    g.deltas,
	})
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	g.peers, g.probes, g.trans, g.apis = append(g.peers, p), append(g.probes, a.probe), append(g.trans, ct), append(g.apis, api)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := p.Run(g.ctx); err != nil && g.ctx.Err() == nil {
			g.errs <- fmt.Errorf("peer %s: %w", user, err)
		}
	}()
	return p, nil
}

// failed returns the first error a peer stopped with, if any.
func (g *peerGroup) failed() error {
	select {
	case err := <-g.errs:
		return err
	default:
		return nil
	}
}

// bytes is the sum of every peer's traffic, in and out.
func (g *peerGroup) bytes() uint64 {
	var n uint64
	for _, t := range g.trans {
		n += t.total()
	}
	return n
}

// close stops every peer, waits for them and closes their APIs. Idempotent.
func (g *peerGroup) close() {
	g.cancel()
	g.wg.Wait()
	for _, api := range g.apis {
		_ = api.Close()
	}
	g.apis = nil
}

// benchRoom is what every Concord phase runs on: the TURN relay (when asked), the signaling
// server and the group of in-process peers, relay-only when the relay runs.
type benchRoom struct {
	rel *relay
	sig *signalingServer
	g   *peerGroup
}

func startBenchRoom(ctx context.Context, relayOn bool, relayCommand func(args []string) *exec.Cmd, log zerolog.Logger) (*benchRoom, error) {
	rel, err := startRelay(ctx, relayOn, relayCommand)
	if err != nil {
		return nil, err
	}
	sig, err := startSignaling(log, rel)
	if err != nil {
		rel.stop()
		return nil, err
	}
	g := newPeerGroup(ctx, sig.url, log)
	g.relayOnly = relayOn
	return &benchRoom{rel: rel, sig: sig, g: g}, nil
}

// close stops the peers, then signaling, then the relay.
func (b *benchRoom) close() {
	b.g.close()
	b.sig.stop()
	b.rel.stop()
}
