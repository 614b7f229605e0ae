package world_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// silence is the tests' Config.ResidentSilence: shorter than the default, still above twice the
// resident host's cadence (a word a second), so that a test waits seconds, not tens.
const silence = 2500 * time.Millisecond

// A client holding a generation newer than any host's (the world restarted and forgot the player:
// the generation started over) is not stranded: its resident region's host stops saying it holds
// the player at that generation, and after Config.ResidentSilence the client takes the word of
// the host that does, numbers its inputs anew and plays on (docs/protocol.md §11 "Residence
// silence"). Without the silence rule the client dropped every word as older, for ever, and its
// inputs were dropped as out of order.
func TestWorldResidentNewerThanRecord(t *testing.T) {
	def := tiles.Def()
	app := newRecorder()
	def.App = app
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}}
	}
	sig := signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop()})
	var api atomic.Pointer[http.Handler]
	mux := http.NewServeMux()
	mux.Handle("/api/worlds/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*api.Load()).ServeHTTP(w, r) }))
	mux.Handle("/", sig.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = sig.Close()
		hs.Close()
	})
	serve := func() *world.Server {
		srv, err := world.NewServer(world.ServerConfig{Def: def, URL: hs.URL})
		if err != nil {
			t.Fatal(err)
		}
		h := srv.Handler()
		api.Store(&h)
		return srv
	}
	srv := serve()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c := joinReturning(t, ctx, srv, hs.URL, app, "eve")
	owner := c.Self()
	poll.Until(t, 20*time.Second, "eve resident with generation 11", func() error {
		if r, gen, ok := c.Resident(); !ok || gen != 11 {
			return fmt.Errorf("resident %v gen %d", r.Room(), gen)
		}
		return nil
	})
	for range 3 {
		if err := c.Input(tiles.Walk(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	waitAcked(t, c, 20*time.Second, "eve's inputs acknowledged", nil)

	// The world restarts with no memory of the player: its region comes back on a new server,
	// which places it anew with generation 1 (in the region of whichever of its rooms' hosts
	// heard it arrive first). Every host's word is now older than the client's.
	srv.Close()
	srv = serve()
	defer srv.Close()
	poll.Until(t, 30*time.Second, "eve resident again with the host's generation", func() error {
		if _, gen, ok := c.Resident(); !ok || gen != 1 {
			return fmt.Errorf("%s (server: %s)", c.Debug(), srv.DebugPlayer(ctx, owner))
		}
		return nil
	})
	// Its inputs apply again: numbered anew from the host's ack.
	before := len(app.applied(owner))
	if err := c.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "eve's input after the restart applied", func() error {
		if n := c.Pending(); n > 0 || len(app.applied(owner)) <= before {
			return fmt.Errorf("%d pending, %d applied", n, len(app.applied(owner))-before)
		}
		return nil
	})
}

// While the resident region's host speaks, an older host's word never takes the player back,
// however long it goes on: the silence rule is the resident host's silence, not time passing.
func TestWorldStaleHostRefusedWhileResidentHostSpeaks(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := joinReturning(t, ctx, tw.srv, tw.url, tw.app, "fay")
	waitResident(t, c, 0, 0)
	// A neighbour's host says, again and again for three silences, that it holds the player
	// with an older generation (its own region).
	end := time.Now().Add(3 * silence)
	for time.Now().Before(end) {
		c.Hear(1, 0, 1, 0, 5, 0)
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond): // the stale host's pace, not synchronisation
		}
		if r, gen, _ := c.Resident(); r.X != 0 || r.Y != 0 || gen != 11 {
			t.Fatalf("the stale host took the player: resident %s gen %d", r.Room(), gen)
		}
	}
	// And the player still plays where it is.
	playOn(t, c, "fay")
}

// A client whose resident host forgot it without a word, and of which no host says anything, asks
// to be placed again: at twice Config.ResidentSilence it joins its region's room again, whose host
// hears it arrive and places it (docs/protocol.md §11 "Residence silence"). Without it the player
// stayed a member with no avatar anywhere, for ever.
func TestWorldSilentResidentPlacedAgain(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := joinReturning(t, ctx, tw.srv, tw.url, tw.app, "gil")
	owner := c.Self()
	waitResident(t, c, 0, 0)
	// Every region in view has heard the player arrive, and told it where it is (before the
	// forgetting: an arrival after it would place the player anew on its own).
	poll.Until(t, 20*time.Second, "gil a member of every region in view", func() error {
		for _, r := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
			if !tw.srv.MemberOf(ctx, owner, r[0], r[1]) {
				return fmt.Errorf("not a member of %v", r)
			}
		}
		if n := tw.srv.Arriving(owner); n > 0 {
			return fmt.Errorf("%d arrivals under way", n)
		}
		return nil
	})
	if err := tw.srv.Forget(ctx, owner, 0, 0); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "gil placed again", func() error {
		if _, gen, ok := c.Resident(); !ok || gen != 1 {
			return fmt.Errorf("%s (server: %s)", c.Debug(), tw.srv.DebugPlayer(ctx, owner))
		}
		return nil
	})
	poll.Until(t, 20*time.Second, "gil's one avatar", func() error {
		n := 0
		for _, e := range c.View(ctx) {
			if e.Owner == owner {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%d avatars in the view", n)
		}
		return nil
	})
	playOn(t, c, "gil")
}

// playOn sends c an input and waits until its resident region's host has applied it.
func playOn(t *testing.T, c *world.Client, who string) {
	t.Helper()
	if err := c.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	waitAcked(t, c, 20*time.Second, who+"'s input applied", c.Debug)
}

// joinReturning joins user (device "d") to the tiles world of srv at url, whose memory holds the
// player's data with generation 10 (it was in the world before): it arrives with 11. Its client
// counts the residence silence in silence.
func joinReturning(t *testing.T, ctx context.Context, srv *world.Server, url string, app world.App, user string) *world.Client {
	t.Helper()
	owner := string(signaling.NewIdentity(user, "d"))
	def := srv.Def()
	first, _ := def.Region(0, 0)
	srv.Remember(owner, app.NewPlayer(first, owner), 10)
	c, err := world.Join(ctx, world.Config{Server: url, World: tiles.Name, App: app, User: user, Device: "d", ResidentSilence: silence})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
