package peer

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// ICEMode says which addresses a peer's WebRTC links may use.
type ICEMode string

// ICE modes.
const (
	// ICEAuto follows the signaling address: loopback-only when Config.Server is a loopback
	// URL (127.0.0.0/8, ::1, localhost), ICEAny otherwise.
	ICEAuto ICEMode = ""
	// ICELoopback gathers and accepts loopback addresses only, and uses only ICE servers on
	// loopback (DESIGN §6: what tests on shared machines need).
	ICELoopback ICEMode = "loopback"
	// ICEAny gathers host candidates on the machine's non-loopback interfaces (mDNS off) plus
	// server-reflexive and relay candidates from the ICE servers signaling hands out.
	ICEAny ICEMode = "any"
	// ICELocal keeps links on this machine but off loopback: one socket on the address of the
	// interface that holds the default route (loopback when there is none), remote addresses
	// of this machine only. A browser on the same machine needs it: stock Firefox and Chromium
	// offer no loopback candidate and pair only non-loopback with non-loopback (docs/design.md
	// §6). `concord` commands use it by default for a loopback signaling URL.
	ICELocal ICEMode = "local"
)

// ParseICEMode parses "loopback", "local", "any" or "" (auto).
func ParseICEMode(s string) (ICEMode, error) {
	switch m := ICEMode(s); m {
	case ICEAuto, ICELoopback, ICELocal, ICEAny:
		return m, nil
	}
	return "", fmt.Errorf("%w: ICE mode %q (want loopback, local or any)", ErrConfig, s)
}

// Loopback reports whether mode confines links to loopback for a peer whose signaling URL is
// server. With a comma-separated list of node URLs, ICEAuto is loopback-only when every node is
// on loopback.
func (m ICEMode) Loopback(server string) bool {
	switch m {
	case ICELoopback:
		return true
	case ICEAny, ICELocal:
		return false
	}
	for s := range strings.SplitSeq(server, ",") {
		if !loopbackURL(strings.TrimSpace(s)) {
			return false
		}
	}
	return true
}

// loopbackURL reports whether a signaling URL names a loopback host.
func loopbackURL(server string) bool {
	host := server
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LinkAPI builds the link.API a peer whose Config.Transport is nil makes for itself: from
// cfg.Link, loopback-only or not as cfg.ICE says for cfg.Server. Outside loopback, the shared
// UDP socket defaults to an ephemeral port on the interface that routes to the signaling
// server. A caller that needs the socket (its port) builds it with LinkAPI, passes
// PionTransport{API} as Config.Transport, and closes it after Run.
func LinkAPI(cfg Config) (*link.API, error) {
	lc := cfg.Link
	if cfg.ICE == ICELocal {
		if lc.UDPMuxAddr == "" {
			ip, err := routeInterface(defaultRouteProbe)
			if err != nil {
				return link.NewAPI(lc) // no default route (a loopback-only namespace): loopback
			}
			lc.UDPMuxAddr = net.JoinHostPort(ip.String(), "0")
		}
		lc.AllowNonLoopback, lc.LocalOnly = true, true
		return link.NewAPI(lc)
	}
	lc.AllowNonLoopback = !cfg.ICE.Loopback(cfg.Server)
	if lc.AllowNonLoopback && lc.UDPMuxAddr == "" {
		ip, err := signalingInterface(cfg.Server)
		if err != nil {
			return nil, err
		}
		lc.UDPMuxAddr = net.JoinHostPort(ip.String(), "0")
	}
	return link.NewAPI(lc)
}

// signalingInterface returns the local IPv4 address the kernel would use to reach the signaling
// server (the first node of a list). Connecting a UDP socket only consults the routing table; it
// sends nothing.
func signalingInterface(server string) (net.IP, error) {
	server, _, _ = strings.Cut(server, ",")
	server = strings.TrimSpace(server)
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: signaling URL %q has no host", ErrConfig, server)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	ip, err := routeInterface(net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("peer: finding the interface toward %s: %w", server, err)
	}
	return ip, nil
}

// defaultRouteProbe is an address off every local network (TEST-NET-3, RFC 5737): the route to
// it is the default route. Nothing is ever sent to it.
const defaultRouteProbe = "203.0.113.1:9"

// routeInterface returns the local IPv4 address the kernel would use to reach addr. Connecting a
// UDP socket only consults the routing table; it sends nothing.
func routeInterface(addr string) (net.IP, error) {
	c, err := net.Dial("udp4", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP, nil
}

// setICEServers keeps the member's STUN/TURN servers from signaling; loop goroutine only.
func (p *Peer) setICEServers(s []sigclient.ICEServer) {
	p.iceServers = s
	p.iceNow.Store(&s)
}

// ICEServers are the STUN/TURN servers signaling handed this member (in joined, refreshed by
// ice-servers), in pion's shape: what another connection of the member's — its voice session
// (voice.DialConfig.ICEServers) — gathers with, so that behind a NAT it gets a relay too. Nil
// before the peer joined, or when the server gives none. Safe from any goroutine.
func (p *Peer) ICEServers() []webrtc.ICEServer {
	s := p.iceNow.Load()
	if s == nil {
		return nil
	}
	return toPionICEServers(*s)
}

// toPionICEServers converts signaling's iceServers to pion's shape.
func toPionICEServers(in []sigclient.ICEServer) []webrtc.ICEServer {
	if len(in) == 0 {
		return nil
	}
	out := make([]webrtc.ICEServer, len(in))
	for i, s := range in {
		out[i] = webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential}
	}
	return out
}

// pairReporter is a Link that knows the candidate types of its selected ICE pair (the pion
// link does; in-memory links do not).
type pairReporter interface {
	SelectedPair() (local, remote string, ok bool)
}

// linkTypes returns the candidate types of r's selected pair, or nil.
func linkTypes(r *remote) *sigclient.LinkTypes {
	if r == nil || r.l == nil {
		return nil
	}
	pr, ok := r.l.(pairReporter)
	if !ok {
		return nil
	}
	local, remote, ok := pr.SelectedPair()
	if !ok {
		return nil
	}
	return &sigclient.LinkTypes{Local: local, Remote: remote}
}

// notMigrating clears a migration in progress; loop goroutine only.
func (p *Peer) notMigrating() { p.migratingSince = time.Time{} }

// migrationStarts notes when a synced member learns of a new host; loop goroutine only.
func (p *Peer) migrationStarts() {
	if p.member != nil && p.member.synced {
		p.migratingSince = p.clock.Now() // the pause ends when the new host's snapshot is merged
	}
}

// migrated ends a migration pause when the new host's snapshot has merged; loop goroutine only.
func (p *Peer) migrated() {
	if p.migratingSince.IsZero() {
		return
	}
	p.lastPause = p.clock.Now().Sub(p.migratingSince)
	p.migratingSince = time.Time{}
	p.count.migrations.Add(1)
}
