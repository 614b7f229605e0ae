package signaling

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// fakeSeeds serves one checkpoint per room it holds.
type fakeSeeds map[RoomID][]byte

func (f fakeSeeds) LoadSeed(_ context.Context, room RoomID) ([]byte, uint32, error) {
	b, ok := f[room]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoCheckpoint, room)
	}
	return b, 42, nil
}

// TestNoHostNeverElected: a join that declines hosting (a server-side follower) is never host,
// not even alone and synced in its room in open mode, where every member may host.
func TestNoHostNeverElected(t *testing.T) {
	e := newEnv(t, Config{})
	f, jf := e.joined(JoinOptions{Room: "r", User: "follower", Kind: KindHost, NoHost: true})
	if jf.Host != 0 || jf.Members[0].MayHost {
		t.Fatalf("follower join: %+v", jf)
	}
	if err := f.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, jt := e.joined(JoinOptions{Room: "r", User: "tab"})
	if jt.Host != 2 {
		t.Fatalf("the tab is not host: %+v", jt)
	}
}

// TestNoHostNarrowsToken: NoHost wins over a token that allows hosting.
func TestNoHostNarrowsToken(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	es := newEnv(t, Config{Secret: secret})
	tok, err := IssueToken(secret, Claims{Room: "r", User: "follower", MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, j := es.joined(JoinOptions{Room: "r", Token: tok, NoHost: true}); j.Host != 0 || j.Members[0].MayHost {
		t.Fatalf("follower with a may-host token: %+v", j)
	}
}

// TestCheckpointRoute: GET /api/rooms/{room}/checkpoint serves a kept room's checkpoint to a
// host that restores it, only while the room has no host, and with a secret only to a join
// token of the room that may host (or the admin key).
func TestCheckpointRoute(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := newEnv(t, Config{Secret: secret, AdminKey: "admin-key-0123456789", Checkpoints: fakeSeeds{"r": []byte("world"), "live": []byte("x")}})
	tok := func(room RoomID, mayHost bool) string {
		s, err := IssueToken(secret, Claims{Room: room, User: "u", MayHost: mayHost, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e.joined(JoinOptions{Room: "live", Token: tok("live", true)})
	for _, tc := range []struct {
		name, path, bearer string
		want               int
		body               string
	}{
		{"no token", "/api/rooms/r/checkpoint", "", http.StatusUnauthorized, ""},
		{"token of another room", "/api/rooms/r/checkpoint", tok("s", true), http.StatusForbidden, ""},
		{"token that may not host", "/api/rooms/r/checkpoint", tok("r", false), http.StatusForbidden, ""},
		{"host token", "/api/rooms/r/checkpoint", tok("r", true), http.StatusOK, "world"},
		{"admin", "/api/rooms/r/checkpoint", "admin-key-0123456789", http.StatusOK, "world"},
		{"no checkpoint", "/api/rooms/none/checkpoint", tok("none", true), http.StatusNoContent, ""},
		{"room with a host", "/api/rooms/live/checkpoint", tok("live", true), http.StatusNoContent, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.getWith(tc.path, "", tc.bearer)
			if code != tc.want || tc.body != "" && string(body) != tc.body {
				t.Fatalf("%d %q, want %d %q", code, body, tc.want, tc.body)
			}
		})
	}
}
