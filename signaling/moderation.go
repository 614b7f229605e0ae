package signaling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Moderation (docs/protocol.md §4 "Signaling: moderation"): the admin key, or a join token of the room with
// the mod claim, kicks members out of a room and bans identities from it. A kicked member's
// socket is closed at once with the reason (error and 1008 close "kicked" or "banned"), the
// others hear member-left with that reason (the host ends its links, as on any leave), and
// Config.MemberLeft tells the TURN relay to end its allocations (and its credentials fail once IsMember stops reporting the member). A banned identity's joins are
// refused with "banned" and the ban's expiry. The hub owns the bans like every other room state;
// it hands each change to the ban writer (Config.Bans), never storing on its own goroutine.

// Ban keeps an identity out of a room.
type Ban struct {
	Room RoomID `json:"room"`
	// Target is a user ("alice": every device of that user, the token's user on a server with
	// a secret) or one identity ("alice/phone", a member's peerId).
	Target Identity `json:"target"`
	// Until is when the ban ends; zero: never.
	Until time.Time `json:"until,omitzero"`
	// Reason is the moderator's word, given to the banned member.
	Reason string `json:"reason,omitempty"`
}

// active reports whether b still holds at now.
func (b Ban) active(now time.Time) bool { return b.Until.IsZero() || now.Before(b.Until) }

// describe is the ban as a refused member reads it.
func (b Ban) describe() string {
	s := string(b.Target) + " is banned from room " + string(b.Room)
	if b.Until.IsZero() {
		s += " for good"
	} else {
		s += " until " + b.Until.UTC().Format(time.RFC3339)
	}
	if b.Reason != "" {
		s += ": " + b.Reason
	}
	return s
}

// BanStore keeps the bans across restarts (Config.Bans), and on a cluster shares them between
// the nodes (each node then tells its server of the others' changes: Server.BanChanged).
// LoadBans is called once, by New; PutBan and DeleteBan by the server's ban writer, its own
// goroutine, in the order the hub made the changes.
type BanStore interface {
	LoadBans() ([]Ban, error)
	// PutBan records b, replacing the ban of the same room and target.
	PutBan(b Ban) error
	// DeleteBan forgets the ban of target in room.
	DeleteBan(room RoomID, target Identity) error
}

// DefaultMaxBansPerRoom is Config.MaxBansPerRoom's default.
const DefaultMaxBansPerRoom = 1024

// maxReasonLen bounds a kick's or ban's reason, in bytes.
const maxReasonLen = 256

// evModerate is a kick, ban or unban for the hub.
type evModerate struct {
	room   RoomID
	target Identity
	op     modOp
	until  time.Time // ban
	reason string
	reply  chan modResult // buffered, capacity 1
}

type modOp int

const (
	opKick modOp = iota
	opBan
	opUnban
	opList
	// The changes of another node (Server.BanChanged): applied, not stored again.
	opRemoteBan
	opRemoteUnban
)

type modResult struct {
	kicked []Identity
	bans   []Ban
	found  bool // unban: there was such a ban
	err    error
}

func (h *hub) moderate(ev *evModerate) {
	var res modResult
	switch ev.op {
	case opList:
		now := h.cfg.Clock.Now()
		for _, b := range h.bans[ev.room] {
			if b.active(now) {
				res.bans = append(res.bans, b)
			}
		}
		slices.SortFunc(res.bans, func(a, b Ban) int { return strings.Compare(string(a.Target), string(b.Target)) })
	case opUnban, opRemoteUnban:
		if _, res.found = h.bans[ev.room][ev.target]; res.found {
			delete(h.bans[ev.room], ev.target)
			if len(h.bans[ev.room]) == 0 {
				delete(h.bans, ev.room)
			}
			h.log.Info().Str("room", string(ev.room)).Str("target", string(ev.target)).Bool("remote", ev.op == opRemoteUnban).Msg("ban lifted")
		}
		if ev.op == opUnban {
			h.saveBan(Ban{Room: ev.room, Target: ev.target}, true)
		}
	case opBan, opRemoteBan:
		h.pruneBans(ev.room)
		rb := h.bans[ev.room]
		// Another node's ban is taken whatever the count: that node bounded it.
		if _, again := rb[ev.target]; !again && len(rb) >= h.cfg.MaxBansPerRoom && ev.op == opBan {
			res.err = fmt.Errorf("%w: room %q has %d bans, the limit is %d", ErrServerBusy, ev.room, len(rb), h.cfg.MaxBansPerRoom)
			h.stats.refuse(res.err)
			break
		}
		if rb == nil {
			rb = make(map[Identity]Ban)
			h.bans[ev.room] = rb
		}
		b := Ban{Room: ev.room, Target: ev.target, Until: ev.until, Reason: ev.reason}
		rb[ev.target] = b
		h.log.Info().Str("room", string(ev.room)).Str("target", string(ev.target)).Time("until", ev.until).Str("reason", ev.reason).
			Bool("remote", ev.op == opRemoteBan).Msg("identity banned")
		if ev.op == opBan {
			h.saveBan(b, false)
		}
		res.bans = []Ban{b}
		res.kicked = h.kick(ev.room, ev.target, fmt.Errorf("%w: %s", ErrBanned, b.describe()), ReasonBanned)
	case opKick:
		msg := string(ev.target) + " kicked from room " + string(ev.room)
		if ev.reason != "" {
			msg += ": " + ev.reason
		}
		res.kicked = h.kick(ev.room, ev.target, fmt.Errorf("%w: %s", ErrKicked, msg), ReasonKicked)
	}
	ev.reply <- res
}

// kick removes every member of room that target names: each is told why (err, and a 1008 close
// with its code) and its socket closed at once; the others hear it left with reason.
func (h *hub) kick(room RoomID, target Identity, err error, reason LeaveReason) []Identity {
	r := h.rooms[room]
	if r == nil {
		return nil
	}
	var out []*member
	for _, m := range r.members {
		if target.Matches(m.id) {
			out = append(out, m)
		}
	}
	ids := make([]Identity, 0, len(out))
	frame := encodeError(err, 0)
	for _, m := range out {
		h.stats.refuse(err)
		r.log.Warn().Uint64("peer", uint64(m.index)).Str("peerId", string(m.id)).Str("reason", string(reason)).Msg("member removed by a moderator")
		m.c.enqueue(frame)
		m.c.shutdown(closeInfo{reason: reason, graceful: true, code: websocket.ClosePolicyViolation, text: string(codeOf(err))})
		h.remove(m, reason)
		ids = append(ids, m.id)
	}
	return ids
}

// banned returns the ban that keeps id out of room, if one holds.
func (h *hub) banned(room RoomID, id Identity) (Ban, bool) {
	rb := h.bans[room]
	if len(rb) == 0 {
		return Ban{}, false
	}
	now := h.cfg.Clock.Now()
	for _, t := range [...]Identity{id, Identity(id.User())} {
		if b, ok := rb[t]; ok && b.active(now) {
			return b, true
		}
	}
	return Ban{}, false
}

// pruneBans forgets room's bans that have run out.
func (h *hub) pruneBans(room RoomID) {
	now := h.cfg.Clock.Now()
	maps.DeleteFunc(h.bans[room], func(_ Identity, b Ban) bool { return !b.active(now) })
}

// banOp is one change for the ban writer.
type banOp struct {
	ban    Ban
	delete bool
}

// banQueue hands the hub's ban changes to the ban writer, in order: the hub never waits for it
// (and so never for storage). Moderators' requests are its only source, and each room holds at
// most MaxBansPerRoom bans; a store that has failed them is logged, not retried.
type banQueue struct {
	mu   sync.Mutex // guards ops
	ops  []banOp
	wake chan struct{} // capacity 1
}

func newBanQueue() *banQueue { return &banQueue{wake: make(chan struct{}, 1)} }

func (q *banQueue) push(op banOp) {
	q.mu.Lock()
	q.ops = append(q.ops, op)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *banQueue) take() []banOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := q.ops
	q.ops = nil
	return ops
}

// saveBan hands a change to the ban writer (none without Config.Bans).
func (h *hub) saveBan(b Ban, lifted bool) {
	if h.banQueue != nil {
		h.banQueue.push(banOp{ban: b, delete: lifted})
	}
}

// writeBans runs on its own goroutine: it stores the hub's ban changes in order, and those
// still queued once the hub has stopped.
func (s *Server) writeBans(q *banQueue, hubDone <-chan struct{}) {
	write := func() {
		for _, op := range q.take() {
			var err error
			if op.delete {
				err = s.cfg.Bans.DeleteBan(op.ban.Room, op.ban.Target)
			} else {
				err = s.cfg.Bans.PutBan(op.ban)
			}
			if err != nil {
				s.log.Error().Err(err).Str("room", string(op.ban.Room)).Str("target", string(op.ban.Target)).Bool("lifted", op.delete).
					Msg("ban change not stored: it holds on this node until it restarts")
			}
		}
	}
	for {
		select {
		case <-q.wake:
			write()
		case <-hubDone:
			write()
			return
		}
	}
}

// BanChanged applies a ban change that another node of a cluster made and stored (BanStore):
// lifted false records b (and kicks b's target from this node's members of the room, with
// "banned"), lifted true lifts the ban of b.Target in b.Room. It does not store it again. Safe
// from any goroutine; it returns once the hub has applied it, or ctx ends.
func (s *Server) BanChanged(ctx context.Context, b Ban, lifted bool) error {
	op := opRemoteBan
	if lifted {
		op = opRemoteUnban
	} else if !b.active(s.cfg.Clock.Now()) {
		return nil
	}
	_, err := s.moderate(ctx, &evModerate{room: b.Room, target: b.Target, op: op, until: b.Until, reason: b.Reason})
	return err
}

// loadBans reads the stored bans for the hub (New, before the hub runs).
func (s *Server) loadBans() map[RoomID]map[Identity]Ban {
	out := make(map[RoomID]map[Identity]Ban)
	if s.cfg.Bans == nil {
		return out
	}
	bans, err := s.cfg.Bans.LoadBans()
	if err != nil {
		s.log.Error().Err(err).Msg("bans not loaded: banned identities may join")
		return out
	}
	now := s.cfg.Clock.Now()
	for _, b := range bans {
		if !b.active(now) || checkRoom(b.Room) != nil || checkTarget(b.Target) != nil {
			continue
		}
		if out[b.Room] == nil {
			out[b.Room] = make(map[Identity]Ban)
		}
		out[b.Room][b.Target] = b
	}
	return out
}

// checkTarget checks a kick's or ban's target: a user, or user/device (a device the server made
// up, "~3", included: it is the peerId of a member that joined without one).
func checkTarget(t Identity) error {
	if err := checkUser(t.User()); err != nil {
		return err
	}
	if strings.Contains(string(t), "/") {
		if t.Device() == "" {
			return fmt.Errorf("%w: target %q has an empty device", ErrBadMessage, t)
		}
		return checkName("device", t.Device(), maxDeviceLen, true)
	}
	return nil
}

func (s *Server) moderate(ctx context.Context, ev *evModerate) (modResult, error) {
	if err := checkRoom(ev.room); err != nil {
		return modResult{}, err
	}
	if ev.op != opList {
		if err := checkTarget(ev.target); err != nil {
			return modResult{}, err
		}
	}
	if len(ev.reason) > maxReasonLen {
		return modResult{}, fmt.Errorf("%w: reason longer than %d bytes", ErrBadMessage, maxReasonLen)
	}
	ev.reply = make(chan modResult, 1)
	if !s.post(ev) {
		return modResult{}, ErrServerClosed
	}
	select {
	case res := <-ev.reply:
		return res, res.err
	case <-s.quit:
		return modResult{}, ErrServerClosed
	case <-ctx.Done():
		return modResult{}, ctx.Err()
	}
}

// Kick removes the members of room that target names (a user: all its devices; or one
// identity), telling each "kicked" with reason, and returns who was removed. A kicked client may
// join again (Ban keeps it out); Concord's clients do not do so by themselves.
func (s *Server) Kick(ctx context.Context, room RoomID, target Identity, reason string) ([]Identity, error) {
	res, err := s.moderate(ctx, &evModerate{room: room, target: target, op: opKick, reason: reason})
	return res.kicked, err
}

// Ban keeps target (a user, or one identity) out of room until b.Until (zero: for good), and
// kicks its members now with "banned". It replaces an earlier ban of the same target. With
// Config.Bans the ban survives restarts. Past Config.MaxBansPerRoom it fails with ErrServerBusy.
func (s *Server) Ban(ctx context.Context, b Ban) ([]Identity, error) {
	res, err := s.moderate(ctx, &evModerate{room: b.Room, target: b.Target, op: opBan, until: b.Until, reason: b.Reason})
	return res.kicked, err
}

// Unban lifts the ban of target from room, and reports whether there was one.
func (s *Server) Unban(ctx context.Context, room RoomID, target Identity) (bool, error) {
	res, err := s.moderate(ctx, &evModerate{room: room, target: target, op: opUnban})
	return res.found, err
}

// Bans lists the bans of room that still hold, by target.
func (s *Server) Bans(ctx context.Context, room RoomID) ([]Ban, error) {
	res, err := s.moderate(ctx, &evModerate{room: room, op: opList})
	return res.bans, err
}

// ModerationRequest is the JSON body of POST /api/rooms/{room}/kick, POST …/ban and
// DELETE …/ban: the target is PeerID (one identity) if given, else User (every device).
type ModerationRequest struct {
	User   string   `json:"user,omitempty"`
	PeerID Identity `json:"peerId,omitempty"`
	// For is a ban's duration (Go syntax: "90m", "24h"); empty: for good.
	For    string `json:"for,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ModerationResponse is the JSON answer of the moderation routes.
type ModerationResponse struct {
	Kicked []Identity `json:"kicked"`
	Bans   []Ban      `json:"bans,omitempty"`
	// Lifted: DELETE …/ban found the ban.
	Lifted bool `json:"lifted,omitempty"`
}

// maxModerationBody bounds a moderation request's body.
const maxModerationBody = 4 << 10

// mayModerate reports whether r may moderate room: the admin key, or (with a Secret) a valid
// join token of room with the mod claim. Otherwise it has answered 401 or 403.
func (s *Server) mayModerate(w http.ResponseWriter, r *http.Request, room RoomID) bool {
	if s.IsAdmin(r) {
		return true
	}
	why := "moderation needs the admin key or a join token of this room with the mod claim (concord token --mod)"
	if b := bearer(r); b != "" && len(s.cfg.Secret) > 0 {
		if c, err := parseToken(s.cfg.Secret, b, s.cfg.Clock.Now); err == nil && c.Mod && c.Room == room {
			return true
		}
	}
	s.refuseHTTP(w, r, why)
	return false
}

func (s *Server) serveModeration(w http.ResponseWriter, r *http.Request) {
	room := RoomID(r.PathValue("room"))
	if !s.mayModerate(w, r, room) {
		return
	}
	op := opKick
	switch {
	case r.Method == http.MethodGet:
		op = opList
	case r.Method == http.MethodDelete:
		op = opUnban
	case strings.HasSuffix(r.URL.Path, "/ban"):
		op = opBan
	}
	ev := &evModerate{room: room, op: op}
	if op != opList {
		var req ModerationRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxModerationBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			s.moderationError(w, fmt.Errorf("%w: body: %v", ErrBadMessage, err))
			return
		}
		ev.target, ev.reason = req.PeerID, req.Reason
		if ev.target == "" {
			ev.target = Identity(req.User)
		}
		if req.For != "" && op == opBan {
			d, err := time.ParseDuration(req.For)
			if err != nil || d <= 0 {
				s.moderationError(w, fmt.Errorf("%w: for %q: want a positive duration (90m, 24h) or none (for good)", ErrBadMessage, req.For))
				return
			}
			ev.until = s.cfg.Clock.Now().Add(d)
		}
	}
	res, err := s.moderate(r.Context(), ev)
	if err == nil && op == opKick && len(res.kicked) == 0 && s.cfg.KickElsewhere != nil {
		// A cluster node serves only the rooms it owns: the room's owner may have the target.
		res.kicked, err = s.cfg.KickElsewhere(r.Context(), room, ev.target, ev.reason)
	}
	if err != nil {
		s.moderationError(w, err)
		return
	}
	if op == opKick && len(res.kicked) == 0 {
		s.moderationError(w, fmt.Errorf("%w: no member of room %q is %s", ErrUnknownPeer, room, ev.target))
		return
	}
	out := ModerationResponse{Kicked: res.kicked, Bans: res.bans, Lifted: res.found}
	if out.Kicked == nil {
		out.Kicked = []Identity{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

// moderationError answers a refused moderation request with its code first.
func (s *Server) moderationError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	switch codeOf(err) {
	case CodeUnknownPeer:
		status = http.StatusNotFound
	case CodeServerBusy:
		status = http.StatusConflict
	}
	if errors.Is(err, ErrServerClosed) {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, string(codeOf(err))+": "+err.Error(), status)
}
