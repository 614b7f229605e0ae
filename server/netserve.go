package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pion/stun/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/turnserver"
	"github.com/concordrtc/concord/signaling"
)

// startTURN starts the embedded TURN/STUN server of --turn.
// ownPorts are ports of this machine a relay may reach besides its relay range: the dedicated
// host's WebRTC socket. live says whether a credential's member is still in its room.
func startTURN(o Options, tlsCfg *tls.Config, ownPorts []int, log zerolog.Logger, live func(turnserver.Member) bool) (*turnserver.Server, error) {
	l := o.TURNLimits
	cfg := turnserver.Config{Logger: log, Addr: o.TURN, AllowPeers: o.TURNAllowPrivate, MaxAllocations: o.TURNUserQuota,
		MaxBytesPerSecond: o.TURNMaxBPS, OwnPorts: ownPorts, Live: live,
		MaxAllocationsPerAddr: l.AllocsPerAddr, MaxAllocationsPerToken: l.AllocsPerToken, MaxConnsPerAddr: l.ConnsPerAddr,
		TCPIdleTimeout: l.TCPIdleTimeout, CredentialTTL: l.CredentialTTL}
	if o.Secret != "" {
		cfg.Key = turnserver.DeriveKey([]byte(o.Secret))
	} else {
		log.Warn().Str("component", "turn").Int("allocs_per_addr", l.AllocsPerAddr).Int("conns_per_addr", l.ConnsPerAddr).
			Msg("TURN: no CONCORD_SECRET: the relay is OPEN, anyone who joins a room under any name gets credentials; " +
				"only the per-address caps (--turn-max-allocs-per-addr, --turn-max-conns-per-addr) bound one client (concord_turn_open 1)")
	}
	if o.Network.PublicIP != "" {
		cfg.PublicIP = net.ParseIP(o.Network.PublicIP)
		if cfg.PublicIP.To4() == nil {
			return nil, optionError(fmt.Errorf("--public-ip %q: not an IPv4 address", o.Network.PublicIP))
		}
	}
	if o.TURNTLS != "" {
		if tlsCfg == nil {
			return nil, optionError(fmt.Errorf("--turn-tls needs --tls-cert and --tls-key"))
		}
		cfg.TLSAddr, cfg.TLS = o.TURNTLS, tlsCfg
		// turns: URLs name a host the clients resolve and verify the certificate against:
		// --turn-host, else the certificate's first name (which may not resolve where the
		// members are: a certificate for a public name served behind split DNS).
		cfg.TLSName = o.TURNHost
		if leaf, err := x509.ParseCertificate(tlsCfg.Certificates[0].Certificate[0]); cfg.TLSName == "" && err == nil && len(leaf.DNSNames) > 0 {
			cfg.TLSName = leaf.DNSNames[0]
		}
	}
	if o.TURNPorts != "" {
		minP, maxP, err := parsePortRange(o.TURNPorts)
		if err != nil {
			return nil, optionError(err)
		}
		cfg.MinPort, cfg.MaxPort = minP, maxP
	}
	return turnserver.New(cfg)
}

// externalServer is one --ice-server.
type externalServer struct {
	url                  string // without credentials
	username, credential string // static credentials, if the flag had USER:PASSWORD@
	turn                 bool
}

// parseICEServers parses --ice-server values: stun:HOST[:PORT], or turn[s]:[USER:PASSWORD@]HOST[:PORT][?transport=…].
func parseICEServers(raw []string) ([]externalServer, error) {
	out := make([]externalServer, 0, len(raw))
	for _, r := range raw {
		scheme, rest, ok := strings.Cut(r, ":")
		if !ok {
			return nil, fmt.Errorf("--ice-server %q: want a stun, turn or turns URL", r)
		}
		es := externalServer{turn: scheme == "turn" || scheme == "turns"}
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, pass, ok := strings.Cut(rest[:at], ":")
			if !ok || user == "" || !es.turn {
				return nil, fmt.Errorf("--ice-server %q: credentials are USER:PASSWORD@, on turn: servers", r)
			}
			if u, err := url.PathUnescape(user); err == nil {
				user = u
			}
			if p, err := url.PathUnescape(pass); err == nil {
				pass = p
			}
			es.username, es.credential = user, pass
			rest = rest[at+1:]
		}
		es.url = scheme + ":" + rest
		if _, err := stun.ParseURI(es.url); err != nil {
			return nil, fmt.Errorf("--ice-server %q: %w", r, err)
		}
		out = append(out, es)
	}
	return out, nil
}

// iceServersFunc returns what every joining member gets in iceServers: the embedded server's
// STUN URL and TURN URLs with REST credentials for the member's identity, then the external
// servers (TURN ones with their static credentials, or REST credentials under secret). Nil
// when there is nothing to hand out, so a loopback server's joined message is unchanged.
func iceServersFunc(ts *turnserver.Server, external []externalServer, secret string) signaling.ICEServersFunc {
	if ts == nil && len(external) == 0 {
		return nil
	}
	return func(room signaling.RoomID, id signaling.Identity) []signaling.ICEServer {
		var out []signaling.ICEServer
		if ts != nil {
			urls := ts.URLs()
			stunURL := "stun:" + strings.SplitN(strings.TrimPrefix(urls[0], "turn:"), "?", 2)[0]
			user, pass := ts.Credentials(turnMember(room, id))
			out = append(out, signaling.ICEServer{URLs: []string{stunURL}},
				signaling.ICEServer{URLs: urls, Username: user, Credential: pass})
		}
		for _, es := range external {
			s := signaling.ICEServer{URLs: []string{es.url}}
			switch {
			case !es.turn:
			case es.username != "":
				s.Username, s.Credential = es.username, es.credential
			case secret != "":
				s.Username = turnserver.Username(string(id), time.Now().Add(externalCredentialTTL))
				s.Credential = turnserver.Password([]byte(secret), s.Username)
			}
			out = append(out, s)
		}
		return out
	}
}

// externalCredentialTTL is the lifetime of REST API credentials for --ice-server TURN servers
// under --ice-server-secret: another server (coturn) cannot ask whether their member stays.
const externalCredentialTTL = 12 * time.Hour

// turnMember is the embedded relay's name of a member.
func turnMember(room signaling.RoomID, id signaling.Identity) turnserver.Member {
	return turnserver.Member{User: id.User(), Device: id.Device(), Room: string(room)}
}

// turnLive is the relay's Config.Live: a credential's member is in its room on this server's
// signaling (none before it starts).
func turnLive(sig *atomic.Pointer[signaling.Server]) func(turnserver.Member) bool {
	return func(m turnserver.Member) bool {
		s := sig.Load()
		return s != nil && s.IsMember(signaling.RoomID(m.Room), signaling.NewIdentity(m.User, m.Device))
	}
}

// turnMemberLeft is signaling's Config.MemberLeft with the embedded relay: a member gone for good
// (left, error, evicted, kicked or banned: any reason but these three) loses its allocations at
// once, as its credentials already fail (turnLive). One whose socket broke (timeout, lost,
// dropped) keeps its links while it redials and resumes (docs/protocol.md §5 "Session: signaling
// outage and resume"): its allocations run out with their lifetime unless it is back to
// refresh them. A replaced one is the same identity on a newer socket.
func turnMemberLeft(ts *turnserver.Server) func(signaling.RoomID, signaling.Identity, signaling.LeaveReason) {
	return func(room signaling.RoomID, id signaling.Identity, reason signaling.LeaveReason) {
		switch reason {
		case signaling.ReasonTimeout, signaling.ReasonLost, signaling.ReasonDropped, signaling.ReasonReplaced:
			return
		}
		ts.Revoke(turnMember(room, id))
	}
}

// originPolicy decides which web origins may open /ws: the server's own host (the Origin's host
// equals the request's Host, as a page served by this server sends), those of --origin, and
// requests without Origin (Go clients, tools). "*" admits every origin.
type originPolicy struct {
	any   bool
	exact map[string]bool // "scheme://host[:port]", lowercase
	hosts map[string]bool // bare hosts, any scheme
}

func newOriginPolicy(list []string) (*originPolicy, error) {
	p := &originPolicy{exact: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range list {
		o = strings.ToLower(strings.TrimRight(o, "/"))
		switch {
		case o == "*":
			p.any = true
		case strings.Contains(o, "://"):
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
				return nil, fmt.Errorf("--origin %q: want scheme://host[:port] or a bare host", o)
			}
			p.exact[u.Scheme+"://"+u.Host] = true
		default:
			p.hosts[o] = true
		}
	}
	return p, nil
}

func (p *originPolicy) allowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || p.any {
		return true
	}
	u, err := url.Parse(strings.ToLower(origin))
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || p.exact[u.Scheme+"://"+u.Host] || p.hosts[u.Host] || p.hosts[u.Hostname()]
}

// refusedOrigin is the close reason a refused origin gets (a browser sees the close frame's
// reason; it would not see an HTTP error's body).
const refusedOrigin = "origin_not_allowed"

// gate refuses websocket handshakes from origins the policy does not admit: it completes the
// handshake and closes at once with 1008 (policy violation) and a reason naming the origin and
// the flag that admits it. Other requests pass to next.
func (p *originPolicy) gate(next http.Handler) http.Handler {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }, HandshakeTimeout: 5 * time.Second}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.allowed(r) {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		if !websocket.IsWebSocketUpgrade(r) {
			http.Error(w, fmt.Sprintf("%s: %q may not open /ws here (serve --origin %s admits it)", refusedOrigin, origin, origin), http.StatusForbidden)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		reason := fmt.Sprintf("%s: %s (serve --origin)", refusedOrigin, origin)
		if len(reason) > 123 { // a close reason is at most 123 bytes
			reason = reason[:123]
		}
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, reason), time.Now().Add(time.Second))
		_ = ws.Close()
	})
}
