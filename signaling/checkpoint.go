package signaling

import (
	"context"
	"errors"
	"net/http"
	"strconv"
)

// CheckpointSource gives the room's last checkpoint to the host that restores it
// (Config.Checkpoints; `concord serve`: internal/durable's store, bounded as at restore).
type CheckpointSource interface {
	// LoadSeed returns room's checkpoint (an ADR-117 message stream, validated and bounded)
	// and its Lamport clock; an error wrapping ErrNoCheckpoint when the room has none.
	LoadSeed(ctx context.Context, room RoomID) (data []byte, clock uint32, err error)
}

// ErrNoCheckpoint is what a CheckpointSource returns (wrapped) for a room without a checkpoint.
var ErrNoCheckpoint = errors.New("signaling: no checkpoint")

// Values of the Concord-Checkpoint header of a 204 from GET /api/rooms/{room}/checkpoint: why
// there is nothing to restore. (Not a 404 or 409: a page asks on every join, and a browser logs
// every 4xx as a console error.)
const (
	CheckpointNone = "none" // the room has no checkpoint, or the server keeps no rooms
	CheckpointLive = "live" // the room has a host: its world lives there, a joiner syncs from it
)

func noCheckpoint(w http.ResponseWriter, why string) {
	w.Header().Set("Concord-Checkpoint", why)
	w.WriteHeader(http.StatusNoContent)
}

// maxCheckpointLoads bounds the checkpoint loads that run at once over every room: each reads up
// to 8 MiB from the store, so a token holder asking in a loop costs the server at most this many
// loads at a time; more get 503 server_busy.
const maxCheckpointLoads = 4

// serveCheckpoint answers GET /api/rooms/{room}/checkpoint: the bytes the first host of a room
// merges before its game starts (docs/protocol.md §6 "Kept rooms"). Only while the room has no
// host: once one runs, the world lives there and a joiner syncs from it (204, live). With a
// secret it needs a join token for the room that may host (a member that may not host never
// needs the world from here) or the admin key.
func (s *Server) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	room := RoomID(r.PathValue("room"))
	if err := checkRoom(room); err != nil {
		http.Error(w, string(CodeBadMessage)+": "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(s.cfg.Secret) > 0 && !s.IsAdmin(r) {
		c, err := parseToken(s.cfg.Secret, bearer(r), s.cfg.Clock.Now)
		if err != nil || c.Room != room || !c.MayHost {
			s.refuseHTTP(w, r, "the checkpoint answers a join token of its room that may host, or the admin key")
			return
		}
	}
	if s.cfg.Checkpoints == nil {
		noCheckpoint(w, CheckpointNone)
		return
	}
	rooms, err := s.Rooms(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	for _, ri := range rooms {
		if ri.Room == room && ri.Host != 0 {
			noCheckpoint(w, CheckpointLive)
			return
		}
	}
	select {
	case s.checkpointLoads <- struct{}{}:
		defer func() { <-s.checkpointLoads }()
	default:
		s.stats.refuse(ErrServerBusy)
		http.Error(w, string(CodeServerBusy)+": too many checkpoint loads at once", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	data, clock, err := s.cfg.Checkpoints.LoadSeed(ctx, room)
	switch {
	case errors.Is(err, ErrNoCheckpoint):
		noCheckpoint(w, CheckpointNone)
		return
	case err != nil:
		s.cfg.Logger.Error().Err(err).Str("room", string(room)).Msg("checkpoint not served")
		http.Error(w, "checkpoint not loaded", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Concord-Clock", strconv.FormatUint(uint64(clock), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
