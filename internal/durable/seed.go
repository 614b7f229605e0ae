package durable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/signaling"
)

// Seed is what a room's first host merges before its game starts (AppConfig.Seed/SeedClock):
// the room's last checkpoint, validated whole and within the restore bounds.
type Seed struct {
	Data  []byte
	Clock crdt.Timestamp
	// Dropped counts the messages beyond the restore bounds, by reason (Bound).
	Dropped map[string]int
}

// LoadSeed reads room's checkpoint from st, validates it whole and applies the restore bounds
// (Bound). A room without a checkpoint gives an error wrapping ErrNoCheckpoint; a malformed one a
// *CorruptError (the room must not open with half a world).
func LoadSeed(ctx context.Context, st *Store, room signaling.RoomID) (Seed, error) {
	c, err := st.LoadCheckpoint(ctx, room)
	if err != nil {
		return Seed{}, err
	}
	if _, err := Validate(room, st.Source(room), c.Data); err != nil {
		return Seed{}, err
	}
	data, clock, dropped, err := Bound(c.Data, c.Clock)
	if err != nil {
		return Seed{}, &CorruptError{Room: room, Source: st.Source(room), Err: err}
	}
	return Seed{Data: data, Clock: clock, Dropped: dropped}, nil
}

// Seeds serves a Store's checkpoints to the hosts that restore rooms over HTTP: it is the
// signaling.CheckpointSource of `concord serve` (GET /api/rooms/{room}/checkpoint).
type Seeds struct {
	Store *Store
	// Dropped, if not nil, hears of every restore bound a served checkpoint was cut by.
	Dropped func(room signaling.RoomID, reason string, n int)
}

// LoadSeed implements signaling.CheckpointSource.
func (s Seeds) LoadSeed(ctx context.Context, room signaling.RoomID) ([]byte, uint32, error) {
	seed, err := LoadSeed(ctx, s.Store, room)
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, 0, fmt.Errorf("%w: %w", signaling.ErrNoCheckpoint, err)
	}
	if err != nil {
		return nil, 0, err
	}
	if s.Dropped != nil {
		for reason, n := range seed.Dropped {
			s.Dropped(room, reason, n)
		}
	}
	return seed.Data, uint32(seed.Clock), nil
}

// ErrRoomLive: the server did not give the checkpoint because the room has a host (the world
// lives there; a joiner syncs from it).
var ErrRoomLive = errors.New("durable: the room has a host")

// FetchSeed asks a `concord serve` at server (its http(s) URL) for room's checkpoint, as a host
// that is not the server (a `concord host` process, a game's own Go program) does before its
// first HostStart: token is its join token (empty on an open server). The answer is validated and
// bounded again here: this host trusts the server no more than a stored stream. A room without
// a checkpoint gives ErrNoCheckpoint; a room that has a host ErrRoomLive.
func FetchSeed(ctx context.Context, client *http.Client, server string, room signaling.RoomID, token string) (Seed, error) {
	if client == nil {
		client = http.DefaultClient
	}
	u := strings.TrimRight(server, "/") + "/api/rooms/" + url.PathEscape(string(room)) + "/checkpoint"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Seed{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Seed{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		if resp.Header.Get("Concord-Checkpoint") == signaling.CheckpointLive {
			return Seed{}, ErrRoomLive
		}
		return Seed{}, ErrNoCheckpoint
	case http.StatusNotFound: // a server that predates kept rooms
		return Seed{}, ErrNoCheckpoint
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Seed{}, fmt.Errorf("durable: checkpoint of %q: %s: %s", room, resp.Status, strings.TrimSpace(string(b)))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxCheckpoint+1))
	if err != nil {
		return Seed{}, err
	}
	if len(data) > MaxCheckpoint {
		return Seed{}, fmt.Errorf("%w: the server sent more than %d bytes", ErrCheckpointTooLarge, MaxCheckpoint)
	}
	clock, err := strconv.ParseUint(resp.Header.Get("Concord-Clock"), 10, 32)
	if err != nil {
		return Seed{}, fmt.Errorf("durable: checkpoint of %q: bad Concord-Clock: %w", room, err)
	}
	source := u
	if _, err := Validate(room, source, data); err != nil {
		return Seed{}, err
	}
	out, c, dropped, err := Bound(data, crdt.Timestamp(clock))
	if err != nil {
		return Seed{}, &CorruptError{Room: room, Source: source, Err: err}
	}
	return Seed{Data: out, Clock: c, Dropped: dropped}, nil
}
