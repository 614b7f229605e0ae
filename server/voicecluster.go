package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/cluster"
	"github.com/concordrtc/concord/signaling"
)

// Voice in a cluster (docs/protocol.md §10 "In a cluster"): a room has one forwarder, on the
// node that owns the room (whose signaling hub holds its member table, the edges relaying their
// members' websockets to it). A POST or DELETE of /voice/{room} reaching another node is passed
// to the owner as one NATS request on the owner's subject; the owner runs it through its own
// forwarder's handler (the token and membership checks happen there, where the members are) and
// the edge writes the owner's reply back unchanged: the answer carries the owner's ICE
// candidates, so media flows between the client and the owner, never through the edge.
const (
	// voiceRelayMaxBody bounds the SDP a relayed request or reply carries (the forwarder's own
	// bound on an offer, voice's maxOffer).
	voiceRelayMaxBody = 64 << 10
	// voiceRelayMaxMsg bounds a relay message on the wire: the SDP (base64 in the JSON), the
	// path, the token and the JSON around them — 101 KiB.
	voiceRelayMaxMsg = voiceRelayMaxBody/3*4 + 16<<10
	// voiceRelayTimeout bounds a relayed request: the owner gathers its candidates (voice's
	// gatherTimeout, 10 s) before it answers.
	voiceRelayTimeout = 12 * time.Second
)

// DefaultVoiceMaxRelayed bounds the relayed requests an owner runs at once (Voice.MaxRelayed,
// --voice-max-relayed); beyond, 429.
const DefaultVoiceMaxRelayed = 32

// voiceSubject is where node answers the voice requests the other nodes relay to it. It is per
// node, not per room (concord.node.<node>.open's sibling): room ids need not be NATS tokens, and
// an edge knows the owner from the room directory before it asks.
func voiceSubject(node string) string { return "concord.node." + node + ".voice" }

// voiceRelayRequest is a relayed POST or DELETE.
type voiceRelayRequest struct {
	Method      string `json:"method"`
	Path        string `json:"path"` // with the query
	Auth        string `json:"auth,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body,omitempty"`
	Edge        string `json:"edge"`
}

// voiceRelayReply is the owner's reply, written back as it is.
type voiceRelayReply struct {
	Status      int    `json:"status"`
	Location    string `json:"location,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// voiceRelay is one node's side of voice in a cluster: the edge's routing and the owner's
// answering.
type voiceRelay struct {
	node  *cluster.Node
	owns  func(signaling.RoomID) bool // this node owns the room (its directory)
	nc    *nats.Conn
	local http.Handler // this node's forwarder
	log   zerolog.Logger
	sem   chan struct{}
	sub   *nats.Subscription
	count *prometheus.CounterVec
	ctx   context.Context
	stop  context.CancelFunc
}

// newVoiceRelay routes local's requests to the rooms' owners and answers the other nodes'. reg
// may be nil.
func newVoiceRelay(node *cluster.Node, nc *nats.Conn, local http.Handler, maxRelayed int, reg prometheus.Registerer, log zerolog.Logger) (*voiceRelay, error) {
	if maxRelayed <= 0 {
		maxRelayed = DefaultVoiceMaxRelayed
	}
	v := &voiceRelay{node: node, nc: nc, local: local, log: log, sem: make(chan struct{}, maxRelayed),
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_voice_relayed_total",
			Help: "Voice requests relayed between cluster nodes, by side (edge, owner) and result (ok, unreachable, too_large, bad, busy, not_owner)."},
			[]string{"side", "result"})}
	v.owns = func(room signaling.RoomID) bool { return node.Directory().Owns(room) }
	v.ctx, v.stop = context.WithCancel(context.Background())
	if reg != nil {
		if err := reg.Register(v.count); err != nil {
			return nil, err
		}
	}
	sub, err := nc.Subscribe(voiceSubject(node.Name()), v.serveOwner)
	if err != nil {
		return nil, fmt.Errorf("voice: subscribe %s: %w", voiceSubject(node.Name()), err)
	}
	v.sub = sub
	return v, nil
}

// close stops answering relayed requests (before the forwarder closes) and ends those running.
func (v *voiceRelay) close() {
	if v == nil {
		return
	}
	_ = v.sub.Unsubscribe()
	v.stop()
}

// voiceRoom is the room of a /voice/{room}[/{session}] path, "" for another path.
func voiceRoom(path string) signaling.RoomID {
	rest, ok := strings.CutPrefix(path, "/voice/")
	if !ok {
		return ""
	}
	room, _, _ := strings.Cut(rest, "/")
	return signaling.RoomID(room)
}

// ServeHTTP serves a request for a room this node owns (or that no live node owns: the local
// forwarder refuses it, not a member) here, and relays one for a room another node owns.
func (v *voiceRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	room := voiceRoom(r.URL.Path)
	owner := v.owner(r.Context(), room)
	if owner == "" || r.Method != http.MethodPost && r.Method != http.MethodDelete {
		v.local.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, voiceRelayMaxBody+1))
	if err != nil || len(body) > voiceRelayMaxBody {
		v.count.WithLabelValues("edge", "too_large").Inc()
		http.Error(w, fmt.Sprintf("voice: bad offer: body over %d bytes or unread", voiceRelayMaxBody), http.StatusBadRequest)
		return
	}
	req, _ := json.Marshal(voiceRelayRequest{Method: r.Method, Path: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Body: body, Edge: v.node.Name()})
	if len(req) > voiceRelayMaxMsg {
		v.count.WithLabelValues("edge", "too_large").Inc()
		http.Error(w, "voice: request too large to relay", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), voiceRelayTimeout)
	defer cancel()
	msg, err := v.nc.RequestWithContext(ctx, voiceSubject(owner), req)
	var rep voiceRelayReply
	if err == nil && (len(msg.Data) > voiceRelayMaxMsg || json.Unmarshal(msg.Data, &rep) != nil || rep.Status < 100 || rep.Status > 599) {
		err = errors.New("bad reply")
	}
	if err != nil {
		// The owner is gone or slow: the room is about to move (its lease expires), and the
		// client retries (docs/protocol.md §10 "A forwarder failing").
		v.count.WithLabelValues("edge", "unreachable").Inc()
		v.log.Debug().Err(err).Str("room", string(room)).Str("owner", owner).Msg("voice: the room's owner did not answer")
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("voice: the forwarder of room %q (node %s) did not answer: %v", room, owner, err), http.StatusServiceUnavailable)
		return
	}
	v.count.WithLabelValues("edge", "ok").Inc()
	h := w.Header()
	if rep.Location != "" {
		h.Set("Location", rep.Location)
	}
	if rep.ContentType != "" {
		h.Set("Content-Type", rep.ContentType)
	}
	if rep.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body)
}

// owner is the live node other than this one that owns room, "" if this node does or none does.
func (v *voiceRelay) owner(ctx context.Context, room signaling.RoomID) string {
	dir := v.node.Directory()
	if room == "" || dir.Owns(room) {
		return ""
	}
	l, ok := dir.Cached(room)
	if !ok || !l.Live(dir.Now()) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if l, ok, err = dir.Lookup(ctx, room); err != nil || !ok || !l.Live(dir.Now()) {
			return ""
		}
	}
	if l.Node == v.node.Name() {
		return ""
	}
	return l.Node
}

// serveOwner answers a request another node relayed: if this node owns the room, through its
// forwarder's handler.
func (v *voiceRelay) serveOwner(m *nats.Msg) {
	var req voiceRelayRequest
	if len(m.Data) > voiceRelayMaxMsg || json.Unmarshal(m.Data, &req) != nil || len(req.Body) > voiceRelayMaxBody ||
		req.Method != http.MethodPost && req.Method != http.MethodDelete || voiceRoom(strings.SplitN(req.Path, "?", 2)[0]) == "" {
		v.count.WithLabelValues("owner", "bad").Inc()
		v.respond(m, voiceRelayReply{Status: http.StatusBadRequest, Body: []byte("voice: bad relayed request\n")})
		return
	}
	select {
	case v.sem <- struct{}{}:
	default:
		v.count.WithLabelValues("owner", "busy").Inc()
		v.respond(m, voiceRelayReply{Status: http.StatusTooManyRequests, Body: []byte("voice: too many relayed requests\n")})
		return
	}
	// Opening a session waits for ICE gathering: off the subscription's goroutine, so that one
	// slow offer does not hold up the others.
	go func() {
		defer func() { <-v.sem }()
		room := voiceRoom(strings.SplitN(req.Path, "?", 2)[0])
		if !v.owns(room) {
			v.count.WithLabelValues("owner", "not_owner").Inc()
			v.respond(m, voiceRelayReply{Status: http.StatusServiceUnavailable,
				Body: []byte(fmt.Sprintf("voice: this node does not own room %q (it is moving)\n", room))})
			return
		}
		ctx, cancel := context.WithTimeout(v.ctx, voiceRelayTimeout)
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, req.Method, req.Path, bytes.NewReader(req.Body))
		if err != nil {
			v.count.WithLabelValues("owner", "bad").Inc()
			v.respond(m, voiceRelayReply{Status: http.StatusBadRequest, Body: []byte("voice: bad relayed request\n")})
			return
		}
		r.RemoteAddr = "relay:" + req.Edge
		if req.Auth != "" {
			r.Header.Set("Authorization", req.Auth)
		}
		if req.ContentType != "" {
			r.Header.Set("Content-Type", req.ContentType)
		}
		rec := &replyWriter{header: http.Header{}}
		v.local.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		v.count.WithLabelValues("owner", "ok").Inc()
		v.respond(m, voiceRelayReply{Status: rec.status, Location: rec.header.Get("Location"), ContentType: rec.header.Get("Content-Type"), Body: rec.body.Bytes()})
	}()
}

func (v *voiceRelay) respond(m *nats.Msg, rep voiceRelayReply) {
	b, _ := json.Marshal(rep)
	_ = m.Respond(b)
}

// replyWriter records the forwarder handler's reply to a relayed request (bounded: an answer is
// at most voiceRelayMaxBody).
type replyWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *replyWriter) Header() http.Header { return w.header }

func (w *replyWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *replyWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len()+len(b) > voiceRelayMaxBody {
		return 0, errors.New("voice: reply too large to relay")
	}
	return w.body.Write(b)
}
