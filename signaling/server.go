package signaling

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// RoomInfo is one room in GET /api/rooms.
type RoomInfo struct {
	Room RoomID `json:"room"`
	// Node is the name of the cluster node that owns the room (Config.NodeName); absent on a
	// server that is no node of a cluster.
	Node    string       `json:"node,omitempty"`
	Term    Term         `json:"term"`
	Host    PeerIndex    `json:"host"`
	Members []MemberInfo `json:"members"`
}

// MemberInfo is one member in GET /api/rooms.
type MemberInfo struct {
	PeerIndex PeerIndex `json:"peerIndex"`
	PeerID    Identity  `json:"peerId"`
	Kind      Kind      `json:"kind"`
	Synced    bool      `json:"synced"`
	// Replica is the member's latest report, null until its first.
	Replica *Report `json:"replica"`
	// Link is the candidate types of the selected pair of the member's link to the host, as
	// its latest report says; absent on the host and before the member reported one.
	Link *LinkTypes `json:"link,omitempty"`
}

// Server is the signaling server. It does not listen: serve Handler with an
// http.Server (or httptest.Server) of your choice.
//
// New starts one goroutine (the hub, which owns all rooms); every websocket
// adds its handler goroutine (the reader) and, while it has something to
// write, a writer. Close stops them all.
type Server struct {
	cfg       Config
	resumeKey []byte // signs resume tokens; nil in open mode
	log       zerolog.Logger
	upgrader  websocket.Upgrader
	// writeBuffers lends the websockets their write buffers (a *sync.Pool: gorilla's BufferPool).
	writeBuffers sync.Pool
	handler      http.Handler
	events       chan hubEvent
	quit         chan struct{} // closed by Close
	stats        stats
	live         *liveMembers // the hub's, read by IsMember

	busyLog lockedLogLimiter
	// checkpointLoads holds a token per checkpoint load running (maxCheckpointLoads).
	checkpointLoads chan struct{}

	closeOnce sync.Once
	wg        sync.WaitGroup // the hub, every handler and every writer

	mu     sync.Mutex // guards the following fields
	closed bool
	conns  map[*conn]struct{}
	// Websockets counted against MaxConns and MaxConnsPerAddr, from before the upgrade.
	open  int
	addrs map[string]int
}

// readBufferSize is a websocket's read buffer.
const readBufferSize = 1 << 10

// hubQueue is the capacity of the hub's event channel. Readers block when it
// is full, which slows their sockets down, never the hub.
const hubQueue = 256

// New returns a running server. The zero Config works (see Config for the
// defaults); without a Secret the server is open and says so once, at Warn
// level.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		resumeKey: deriveResumeKey(cfg.Secret),
		log:       cfg.Logger,
		events:    make(chan hubEvent, hubQueue),
		quit:      make(chan struct{}),
		conns:     make(map[*conn]struct{}),
		addrs:     make(map[string]int),

		checkpointLoads: make(chan struct{}, maxCheckpointLoads),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteWait,
		CheckOrigin:      cfg.CheckOrigin,
		// A batch of up to maxBatchBytes leaves in one or two writes; the buffer is borrowed from
		// the pool only while a message is written, so idle members hold none.
		WriteBufferSize: 16 << 10,
		WriteBufferPool: &s.writeBuffers,
		// Signaling's messages are small (a join, an SDP of at most MaxSDPLen is read in a few
		// fills): a reader of its own, not net/http's 4 KiB one, which goes with the handler.
		ReadBufferSize: readBufferSize,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("GET /api/rooms", s.serveRooms)
	mux.HandleFunc("POST /api/rooms/{room}/kick", s.serveModeration)
	mux.HandleFunc("POST /api/rooms/{room}/ban", s.serveModeration)
	mux.HandleFunc("DELETE /api/rooms/{room}/ban", s.serveModeration)
	mux.HandleFunc("GET /api/rooms/{room}/bans", s.serveModeration)
	mux.HandleFunc("GET /api/rooms/{room}/checkpoint", s.serveCheckpoint)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	s.handler = mux
	if cfg.Registerer != nil {
		s.stats.register(cfg.Registerer, &s.cfg, s.log)
	}
	if len(cfg.Secret) == 0 {
		s.log.Warn().Msg("signaling: no Secret configured: the server is OPEN, anyone may join any room under any identity but the server's own members' (Reserved) and every member may host")
	} else if len(cfg.Secret) < 32 {
		s.log.Warn().Int("bytes", len(cfg.Secret)).Msg("signaling: Secret is shorter than 32 bytes; HS256 tokens signed with it are weak")
	}
	// A timer's event enters the wait group like a handler, so Close waits for it too.
	post := func(ev hubEvent) {
		if !s.enter() {
			return
		}
		defer s.wg.Done()
		s.post(ev)
	}
	spawn := func(f func()) {
		if !s.enter() {
			return
		}
		go func() {
			defer s.wg.Done()
			f()
		}()
	}
	h := newHub(&s.cfg, s.log, &s.stats, s.resumeKey, post, spawn)
	s.live = h.live
	h.bans = s.loadBans()
	hubDone := make(chan struct{})
	if s.cfg.Bans != nil {
		h.banQueue = newBanQueue()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.writeBans(h.banQueue, hubDone)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(hubDone)
		h.run(s.events, s.quit)
	}()
	return s
}

// Handler serves GET /ws (the websocket), GET /api/rooms, the moderation routes under
// /api/rooms/{room}/ (moderation.go) and GET /healthz.
// After Close it answers 503; a request whose Host is not allowed (see
// Config.AllowedHosts) gets 421.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r, s.cfg.AllowedHosts) {
			s.stats.hostRefused.Add(1)
			http.Error(w, "host not allowed: "+r.Host, http.StatusMisdirectedRequest)
			return
		}
		if !s.enter() {
			http.Error(w, ErrServerClosed.Error(), http.StatusServiceUnavailable)
			return
		}
		defer s.wg.Done()
		s.handler.ServeHTTP(w, r)
	})
}

// Close sends every socket a close frame (1001, "server_closing"), stops the
// hub and waits for every goroutine of the server. Sockets whose peer has not
// answered within CloseGrace are closed without waiting further, so Close
// returns within about CloseGrace. It is idempotent; concurrent calls all
// wait. It always returns nil.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.shutdown(closeInfo{graceful: true, code: websocket.CloseGoingAway, text: string(CodeServerClosing)})
		}
		close(s.quit)
		// Peers get CloseGrace to answer; then the sockets still open
		// (a peer that does not read, a write stuck on a full buffer)
		// are closed under them.
		hardDone := make(chan struct{})
		t := time.AfterFunc(s.cfg.CloseGrace, func() {
			defer close(hardDone)
			s.mu.Lock()
			defer s.mu.Unlock()
			for c := range s.conns {
				_ = c.ws.Close()
			}
		})
		s.wg.Wait()
		if !t.Stop() {
			<-hardDone
		}
	})
	s.wg.Wait()
	return nil
}

// Stats returns the server's counters. It may be called from any goroutine.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Rooms returns every room, sorted by name, with members by peer index: the
// data of GET /api/rooms.
func (s *Server) Rooms(ctx context.Context) ([]RoomInfo, error) {
	reply := make(chan []RoomInfo, 1)
	if !s.post(&evRooms{reply: reply}) {
		return nil, ErrServerClosed
	}
	select {
	case rooms := <-reply:
		return rooms, nil
	case <-s.quit:
		return nil, ErrServerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// enter admits a goroutine into the server's wait group unless it is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.stats.conns.Add(1)
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.conns.Add(-1)
}

// post hands an event to the hub; it returns false once the server closes.
func (s *Server) post(ev hubEvent) bool {
	select {
	case s.events <- ev:
		return true
	case <-s.quit:
		return false
	}
}

// remoteAddr is the IP address a request comes from, the key of MaxConnsPerAddr.
func remoteAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// reserve counts a websocket about to be upgraded against the caps; release undoes it.
func (s *Server) reserve(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= s.cfg.MaxConns:
		s.stats.connsTotal.Add(1)
		return fmt.Errorf("%w: %d websockets, the limit is %d", ErrServerBusy, s.open, s.cfg.MaxConns)
	case s.addrs[addr] >= s.cfg.MaxConnsPerAddr:
		s.stats.connsAddr.Add(1)
		return fmt.Errorf("%w: %d websockets from %s, the limit per address is %d", ErrServerBusy, s.addrs[addr], addr, s.cfg.MaxConnsPerAddr)
	}
	s.open++
	s.addrs[addr]++
	return nil
}

func (s *Server) release(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.addrs[addr]--; s.addrs[addr] <= 0 {
		delete(s.addrs, addr)
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	addr := remoteAddr(r)
	if err := s.reserve(addr); err != nil {
		// Refused before the upgrade, so that a flood costs no goroutines; the reason is in
		// the body (CodeServerBusy first) for clients that read it.
		if ok, n := s.busyLog.allow(s.cfg.Clock.Now(), time.Second); ok {
			s.log.Warn().Err(err).Str("remote", r.RemoteAddr).Int("suppressed", n).Msg("websocket refused at a connection cap")
		}
		w.Header().Set("Retry-After", "5")
		http.Error(w, string(CodeServerBusy)+": "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.release(addr)
		s.log.Debug().Err(err).Str("remote", r.RemoteAddr).Msg("websocket upgrade failed")
		return
	}
	// The websocket lives on a goroutine of its own and the handler returns: net/http then lets
	// go of its per-connection state (its 4 KiB write buffer, the request, a deeper stack),
	// which an idle member would otherwise hold for as long as it stays. This goroutine holds a
	// place in wg (Handler), so adding the websocket's cannot race with Close's Wait.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.release(addr)
		s.serveUpgraded(ws, r.RemoteAddr)
	}()
}

// serveUpgraded serves an upgraded websocket until it closes: as a member here, or relayed to
// the node that owns its room.
func (s *Server) serveUpgraded(ws *websocket.Conn, remote string) {
	var first []byte
	var refuse error
	if s.cfg.Router != nil {
		var relay Pipe
		first, relay, refuse = s.route(ws)
		if first == nil {
			_ = ws.Close()
			return
		}
		if relay != nil {
			s.stats.relayed.Add(1)
			s.relay(ws, relay, first)
			s.stats.relayed.Add(-1)
			return
		}
	}
	s.serveConn(ws, first, refuse, remote)
}

// HostAllowed reports whether r's Host header names one of allowed (compared without port,
// case-insensitively). With allowed empty, a request that arrived on a loopback address must
// name a loopback host, and any other request passes: a DNS-rebinding page reaches a loopback
// server only under a name of its own. Servers that share a listener with Handler can use it.
func HostAllowed(r *http.Request, allowed []string) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if len(allowed) > 0 {
		for _, a := range allowed {
			if strings.EqualFold(host, a) {
				return true
			}
		}
		return false
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if tcp, ok := local.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// roomsFor returns the rooms a GET /api/rooms may see: all on an open server or with the admin
// key; with a secret and a join token, the token's room. ok is false without either.
func (s *Server) roomsFor(r *http.Request, rooms []RoomInfo) (_ []RoomInfo, ok bool) {
	if len(s.cfg.Secret) == 0 {
		return rooms, true
	}
	b := bearer(r)
	if b == "" {
		return nil, false
	}
	if s.IsAdmin(r) {
		return rooms, true
	}
	c, err := parseToken(s.cfg.Secret, b, s.cfg.Clock.Now)
	if err != nil {
		return nil, false
	}
	out := rooms[:0]
	for _, ri := range rooms {
		if ri.Room == c.Room {
			out = append(out, ri)
		}
	}
	return out, true
}

func (s *Server) serveRooms(w http.ResponseWriter, r *http.Request) {
	var rooms []RoomInfo
	var err error
	if s.cfg.Router != nil {
		rooms, err = s.cfg.Router.Rooms(r.Context())
	} else {
		rooms, err = s.Rooms(r.Context())
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	rooms, ok := s.roomsFor(r, rooms)
	if !ok {
		s.stats.refuse(ErrTokenRequired)
		w.Header().Set("WWW-Authenticate", `Bearer realm="concord"`)
		http.Error(w, string(CodeTokenRequired)+": this server has a secret: send a join token (its room only) or the admin key as \"Authorization: Bearer ...\"", http.StatusUnauthorized)
		return
	}
	b, err := json.Marshal(rooms)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// authorize turns a join message into a join request: from its token when the
// server has a secret, else from the message itself (open mode).
func (s *Server) authorize(m *clientMessage) (joinRequest, error) {
	if len(s.cfg.Secret) == 0 {
		if m.User == "" {
			return joinRequest{}, fmt.Errorf("%w: join without user", ErrBadMessage)
		}
		kind := m.Kind
		if kind == "" {
			kind = KindBrowser
		}
		id := NewIdentity(m.User, m.Device)
		if slices.ContainsFunc(s.cfg.Reserved, func(r Identity) bool { return r.Matches(id) }) {
			// One of the server's own members: only with a token of the service key, so that
			// an open join cannot replace it.
			if m.Token == "" || len(s.cfg.ServiceKey) == 0 {
				return joinRequest{}, fmt.Errorf("%w: %q is one of this server's own members", ErrTokenRequired, id)
			}
			return s.fromToken(s.cfg.ServiceKey, m)
		}
		// Open mode: the power level never comes from the client.
		return joinRequest{room: m.Room, user: m.User, device: m.Device, kind: kind, power: s.cfg.DefaultPowerLevel, mayHost: !m.NoHost}, nil
	}
	if m.Token == "" {
		return joinRequest{}, fmt.Errorf("%w: this server needs a token to join %q", ErrTokenRequired, m.Room)
	}
	return s.fromToken(s.cfg.Secret, m)
}

// fromToken is the join request of m from its token, signed with key.
func (s *Server) fromToken(key []byte, m *clientMessage) (joinRequest, error) {
	c, err := parseToken(key, m.Token, s.cfg.Clock.Now)
	if err != nil {
		return joinRequest{}, err
	}
	if c.Room != m.Room {
		return joinRequest{}, fmt.Errorf("%w: the token is for room %q, not %q", ErrWrongRoom, c.Room, m.Room)
	}
	if m.User != "" && m.User != c.User {
		return joinRequest{}, fmt.Errorf("%w: the token is for user %q, not %q", ErrTokenMismatch, c.User, m.User)
	}
	device := m.Device
	if c.Device != "" {
		if device != "" && device != c.Device {
			return joinRequest{}, fmt.Errorf("%w: the token is for device %q, not %q", ErrTokenMismatch, c.Device, device)
		}
		device = c.Device
	}
	kind := m.Kind
	if c.Kind != "" {
		if kind != "" && kind != c.Kind {
			return joinRequest{}, fmt.Errorf("%w: the token is for kind %q, not %q", ErrTokenMismatch, c.Kind, kind)
		}
		kind = c.Kind
	}
	if kind == "" {
		kind = KindBrowser
	}
	return joinRequest{room: m.Room, user: c.User, device: device, kind: kind, power: c.Power, mayHost: c.MayHost && !m.NoHost, freeDevice: c.Device == ""}, nil
}

// checkResume adds a join's resume claim to req once its room and token check out. A join
// without a device resumes the device the server made up for the claimed index.
func (s *Server) checkResume(m *clientMessage, req *joinRequest) error {
	rc := m.Resume
	if rc == nil {
		return nil
	}
	if rc.Room != "" && rc.Room != req.room {
		return fmt.Errorf("%w: the claim is for room %q, the join for %q", ErrResumeRoom, rc.Room, req.room)
	}
	if req.device == "" {
		req.device = serverDevicePrefix + strconv.FormatUint(uint64(rc.Index), 10)
	}
	id := NewIdentity(req.user, req.device)
	vouched, ok := checkResumeToken(s.resumeKey, req.room, rc.Index, id, rc.Token)
	if !ok {
		return fmt.Errorf("%w: for peer %d as %s in room %q", ErrResumeToken, rc.Index, id, req.room)
	}
	if s.resumeKey != nil {
		// The token vouches for the term it was issued in; a claim may run ahead of it only by
		// the elections a member can have seen since (MaxTermSkew).
		if rc.Term > vouched+MaxTermSkew {
			return fmt.Errorf("%w: term %d, the resume token vouches for term %d (at most %d ahead)", ErrResumeTerm, rc.Term, vouched, MaxTermSkew)
		}
		req.vouched, req.hasVouched = vouched, true
	}
	claim := *rc
	req.resume = &claim
	return nil
}
