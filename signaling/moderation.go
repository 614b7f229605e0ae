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
	"time"

	"github.com/gorilla/websocket"
)

// Moderation (docs/protocol.md §4 "Signaling: moderation"): the admin key, or a join token of the room with
// the mod claim, kicks members out of a room and bans identities from it. A kicked member's
// socket is closed at once with the reason (error and 1008 close "kicked" or "banned"), the
// others hear member-left with that reason (the host ends its links, as on any leave), and
// Config.OnLeave tells the TURN relay to end its credentials. A banned identity's joins are
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

// BanStore keeps the bans across restarts (Config.Bans). LoadBans is called once, by New;
// SaveBans by the server's ban writer (its own goroutine) with every active ban after each
// change: the latest set replaces the earlier ones.
type BanStore interface {
	LoadBans() ([]Ban, error)
	SaveBans([]Ban) error
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
	case opUnban:
		if _, res.found = h.bans[ev.room][ev.target]; res.found {
			delete(h.bans[ev.room], ev.target)
			if len(h.bans[ev.room]) == 0 {
				delete(h.bans, ev.room)
			}
			h.log.Info().Str("room", string(ev.room)).Str("target", string(ev.target)).Msg("ban lifted")
			h.saveBans()
		}
	case opBan:
		h.pruneBans(ev.room)
		rb := h.bans[ev.room]
		if _, again := rb[ev.target]; !again && len(rb) >= h.cfg.MaxBansPerRoom {
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
		h.log.Info().Str("room", string(ev.room)).Str("target", string(ev.target)).Time("until", ev.until).Str("reason", ev.reason).Msg("identity banned")
		h.saveBans()
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

// saveBans hands every active ban to the ban writer: it replaces a set the writer has not
// taken yet, so the hub never waits for storage.
func (h *hub) saveBans() {
	if h.banSave == nil {
		return
	}
	now := h.cfg.Clock.Now()
	all := []Ban{}
	for _, rb := range h.bans {
		for _, b := range rb {
			if b.active(now) {
				all = append(all, b)
			}
		}
	}
	select {
	case <-h.banSave: // the writer has not taken the previous set: this one replaces it
	default:
	}
	h.banSave <- all // the hub is the only sender and the slot is free
}

// writeBans runs on its own goroutine: it saves each set of bans the hub hands it, and the last
// one once the hub has stopped.
func (s *Server) writeBans(sets chan []Ban, hubDone <-chan struct{}) {
	save := func(bans []Ban) {
		if err := s.cfg.Bans.SaveBans(bans); err != nil {
			s.log.Error().Err(err).Int("bans", len(bans)).Msg("bans not saved: they hold until the server restarts")
		}
	}
	for {
		select {
		case bans := <-sets:
			save(bans)
		case <-hubDone:
			select {
			case bans := <-sets:
				save(bans)
			default:
			}
			return
		}
	}
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

// checkTarget checks a kick's or ban's target: a user, or user/device.
func checkTarget(t Identity) error {
	if err := checkUser(t.User()); err != nil {
		return err
	}
	if strings.Contains(string(t), "/") {
		return checkDevice(t.Device())
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
