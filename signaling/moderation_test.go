package signaling

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var modSecret = []byte("moderation secret, 32 bytes long")

const modAdminKey = "admin-key-for-moderation"

// modToken mints a join token of room for user (mod: with the mod claim).
func modToken(t *testing.T, room RoomID, user string, mod bool) string {
	t.Helper()
	tok, err := IssueToken(modSecret, Claims{Room: room, User: user, MayHost: true, Mod: mod, ExpiresAt: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// moderate sends a moderation request and returns its status and body.
func (e *testEnv) moderate(method, path, bearer string, body any) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	code, b := e.request(method, path, "", bearer, rd)
	return code, string(b)
}

// leaves records Config.MemberLeft calls.
type leaves struct {
	mu  sync.Mutex // guards got
	got []string
}

func (l *leaves) hook(room RoomID, id Identity, reason LeaveReason) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, string(room)+" "+string(id)+" "+string(reason))
}

func (l *leaves) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range l.got {
		if g == s {
			return true
		}
	}
	return false
}

// A kick ends the member's connection at once with "kicked" (its client's Closed wraps
// ErrKicked: a terminal error), the others hear it left with reason kicked, MemberLeft fires (the
// TURN relay's hook), and the room keeps its other members.
func TestModerationKickEndsMemberAtOnce(t *testing.T) {
	var gone leaves
	e := newEnv(t, Config{Secret: modSecret, AdminKey: modAdminKey, MemberLeft: gone.hook})
	alice, _ := e.joined(JoinOptions{Room: "r", Device: "a", Token: modToken(t, "r", "alice", false)})
	bob, _ := e.joined(JoinOptions{Room: "r", Device: "b", Token: modToken(t, "r", "bob", false)})
	until[MemberJoined](t, alice, nil)

	code, body := e.moderate("POST", "/api/rooms/r/kick", modAdminKey, ModerationRequest{User: "bob", Reason: "griefing"})
	if code != http.StatusOK || !strings.Contains(body, `"bob/b"`) {
		t.Fatalf("kick: %d %s", code, body)
	}
	cl := closedEvent(t, bob)
	if !errors.Is(cl.Err, ErrKicked) || errors.Is(cl.Err, ErrBanned) {
		t.Fatalf("bob closed with %v, want ErrKicked", cl.Err)
	}
	left := until[MemberLeft](t, alice, nil)
	if left.PeerID != "bob/b" || left.Reason != ReasonKicked {
		t.Fatalf("alice saw %+v", left)
	}
	if !gone.has("r bob/b kicked") {
		t.Fatalf("MemberLeft: %v", gone.got)
	}
	if rs := e.rooms(); len(rs) != 1 || len(rs[0].Members) != 1 {
		t.Fatalf("rooms after the kick: %+v", rs)
	}
	// A kick of nobody says so.
	if code, body := e.moderate("POST", "/api/rooms/r/kick", modAdminKey, ModerationRequest{User: "carol"}); code != http.StatusNotFound {
		t.Fatalf("kick of nobody: %d %s", code, body)
	}
	if e.srv.Stats().Refused[CodeKicked] != 1 {
		t.Fatalf("refused: %v", e.srv.Stats().Refused)
	}
}

// Only the admin key or a token of the room with the mod claim moderates: none 401, a member's
// token 403, a moderator of another room 403.
func TestModerationNeedsModClaim(t *testing.T) {
	e := newEnv(t, Config{Secret: modSecret, AdminKey: modAdminKey})
	bob, _ := e.joined(JoinOptions{Room: "r", Device: "b", Token: modToken(t, "r", "bob", false)})
	for _, c := range []struct {
		name, bearer string
		want         int
	}{
		{"no credential", "", http.StatusUnauthorized},
		{"a member's token", modToken(t, "r", "alice", false), http.StatusForbidden},
		{"a moderator of another room", modToken(t, "other", "alice", true), http.StatusForbidden},
		{"a wrong admin key", modAdminKey + "x", http.StatusForbidden},
	} {
		for _, route := range []struct{ method, path string }{{"POST", "/api/rooms/r/kick"}, {"POST", "/api/rooms/r/ban"}, {"DELETE", "/api/rooms/r/ban"}, {"GET", "/api/rooms/r/bans"}} {
			if code, body := e.moderate(route.method, route.path, c.bearer, ModerationRequest{User: "bob"}); code != c.want {
				t.Errorf("%s: %s %s: %d %s, want %d", c.name, route.method, route.path, code, body, c.want)
			}
		}
	}
	if rs := e.rooms(); len(rs) != 1 || len(rs[0].Members) != 1 {
		t.Fatalf("bob should still be in: %+v", rs)
	}
	if code, body := e.moderate("POST", "/api/rooms/r/kick", modToken(t, "r", "mod", true), ModerationRequest{PeerID: "bob/b"}); code != http.StatusOK {
		t.Fatalf("a moderator's kick: %d %s", code, body)
	}
	if cl := closedEvent(t, bob); !errors.Is(cl.Err, ErrKicked) {
		t.Fatalf("bob: %v", cl.Err)
	}
}

// A ban kicks the identity now ("banned") and refuses its joins with "banned" and the expiry; it
// survives a restart of the server (BanFile), runs out at its expiry, and DELETE lifts it.
func TestModerationBanSurvivesRestart(t *testing.T) {
	clock := &manualClock{t: time.Now()}
	store := NewBanFile(filepath.Join(t.TempDir(), "bans.json"))
	cfg := Config{Secret: modSecret, AdminKey: modAdminKey, Bans: store, Clock: clock}
	e := newEnv(t, cfg)
	bobTok := modToken(t, "r", "bob", false)
	bob, _ := e.joined(JoinOptions{Room: "r", Device: "b", Token: bobTok})
	code, body := e.moderate("POST", "/api/rooms/r/ban", modToken(t, "r", "mod", true), ModerationRequest{User: "bob", For: "1h", Reason: "cheating"})
	if code != http.StatusOK {
		t.Fatalf("ban: %d %s", code, body)
	}
	if cl := closedEvent(t, bob); !errors.Is(cl.Err, ErrBanned) || !strings.Contains(cl.Err.Error(), "cheating") {
		t.Fatalf("bob closed with %v, want ErrBanned with the reason", cl.Err)
	}
	refused := func(e *testEnv, device string) error {
		t.Helper()
		_, err := e.dialErr(JoinOptions{Room: "r", Device: device, Token: bobTok}, e.clientConfig())
		return err
	}
	if err := refused(e, "phone"); !errors.Is(err, ErrBanned) || !strings.Contains(err.Error(), "until") {
		t.Fatalf("bob's join on another device: %v, want ErrBanned with the expiry", err)
	}
	// Another room is not concerned.
	if _, err := e.dialErr(JoinOptions{Room: "s", Device: "b", Token: modToken(t, "s", "bob", false)}, e.clientConfig()); err != nil {
		t.Fatalf("bob in room s: %v", err)
	}
	_ = e.srv.Close()

	// A new server on the same file (as a restarted process reads it) still refuses bob.
	cfg.Bans = NewBanFile(filepath.Join(filepath.Dir(store.path), "bans.json"))
	e2 := newEnv(t, cfg)
	if err := refused(e2, "b"); !errors.Is(err, ErrBanned) {
		t.Fatalf("after a restart bob's join: %v, want ErrBanned", err)
	}
	code, body = e2.moderate("GET", "/api/rooms/r/bans", modAdminKey, nil)
	if code != http.StatusOK || !strings.Contains(body, `"target":"bob"`) {
		t.Fatalf("bans after restart: %d %s", code, body)
	}
	// The ban runs out at its expiry.
	clock.add(61 * time.Minute)
	if err := refused(e2, "b"); err != nil {
		t.Fatalf("bob after the ban ran out: %v", err)
	}
	// For good, then lifted.
	if code, body := e2.moderate("POST", "/api/rooms/r/ban", modAdminKey, ModerationRequest{PeerID: "bob/b"}); code != http.StatusOK {
		t.Fatalf("ban for good: %d %s", code, body)
	}
	if err := refused(e2, "b"); !errors.Is(err, ErrBanned) || !strings.Contains(err.Error(), "for good") {
		t.Fatalf("bob/b banned for good: %v", err)
	}
	if err := refused(e2, "c"); err != nil {
		t.Fatalf("bob/c is not banned: %v", err)
	}
	if code, body := e2.moderate("DELETE", "/api/rooms/r/ban", modAdminKey, ModerationRequest{PeerID: "bob/b"}); code != http.StatusOK || !strings.Contains(body, `"lifted":true`) {
		t.Fatalf("unban: %d %s", code, body)
	}
	if err := refused(e2, "b"); err != nil {
		t.Fatalf("bob/b after the unban: %v", err)
	}
}

// A member that joined without a device has a peerId the server made up ("carol/~1"): it is a
// target like any other, and a room name with "/" and spaces travels escaped in the path.
func TestModerationServerDeviceAndRoomPath(t *testing.T) {
	e := newEnv(t, Config{AdminKey: modAdminKey})
	carol, j := e.joined(JoinOptions{Room: "a/b c", User: "carol"})
	if !strings.Contains(string(j.PeerID), "/~") {
		t.Fatalf("peerId %s", j.PeerID)
	}
	code, body := e.moderate("POST", "/api/rooms/"+url.PathEscape("a/b c")+"/kick", modAdminKey, ModerationRequest{PeerID: j.PeerID})
	if code != http.StatusOK || !strings.Contains(body, string(j.PeerID)) {
		t.Fatalf("kick %s: %d %s", j.PeerID, code, body)
	}
	if cl := closedEvent(t, carol); !errors.Is(cl.Err, ErrKicked) {
		t.Fatalf("carol: %v", cl.Err)
	}
}

// A room holds at most MaxBansPerRoom bans; bad bodies are refused.
func TestModerationBanLimits(t *testing.T) {
	e := newEnv(t, Config{AdminKey: modAdminKey, MaxBansPerRoom: 2})
	for i, u := range []string{"a", "b", "c"} {
		code, body := e.moderate("POST", "/api/rooms/r/ban", modAdminKey, ModerationRequest{User: u})
		if want := map[bool]int{true: http.StatusOK, false: http.StatusConflict}[i < 2]; code != want {
			t.Fatalf("ban %d: %d %s, want %d", i, code, body, want)
		}
	}
	for _, b := range []string{`{"user":"x","for":"-1h"}`, `{"user":"x","for":"soon"}`, `{"user":""}`, `{"user":"x","extra":1}`, `{"user":"` + strings.Repeat("x", 300) + `"}`} {
		req, _ := http.NewRequest("POST", e.url+"/api/rooms/r/ban", strings.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+modAdminKey)
		resp, err := e.hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("body %s: %d, want 400", b, resp.StatusCode)
		}
	}
}

// recordingBans is a BanStore that records the changes it is given.
type recordingBans struct {
	mu  sync.Mutex // guards ops
	ops []string
}

func (r *recordingBans) LoadBans() ([]Ban, error) { return nil, nil }
func (r *recordingBans) PutBan(b Ban) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, "put "+string(b.Room)+" "+string(b.Target))
	return nil
}
func (r *recordingBans) DeleteBan(room RoomID, target Identity) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, "delete "+string(room)+" "+string(target))
	return nil
}
func (r *recordingBans) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

// On a cluster, a ban another node stored reaches this node through BanChanged: it kicks the
// target's members here ("banned") and refuses its joins, and is not stored again; lifting it
// there lifts it here. This node's own changes reach the store in order.
func TestModerationBanFromAnotherNode(t *testing.T) {
	store := &recordingBans{}
	e := newEnv(t, Config{Secret: modSecret, AdminKey: modAdminKey, Bans: store})
	bobTok := modToken(t, "r", "bob", false)
	bob, _ := e.joined(JoinOptions{Room: "r", Device: "b", Token: bobTok})
	ctx := context.Background()
	if err := e.srv.BanChanged(ctx, Ban{Room: "r", Target: "bob", Until: time.Now().Add(time.Hour), Reason: "elsewhere"}, false); err != nil {
		t.Fatal(err)
	}
	if cl := closedEvent(t, bob); !errors.Is(cl.Err, ErrBanned) {
		t.Fatalf("bob closed with %v, want ErrBanned", cl.Err)
	}
	if _, err := e.dialErr(JoinOptions{Room: "r", Device: "b", Token: bobTok}, e.clientConfig()); !errors.Is(err, ErrBanned) {
		t.Fatalf("bob's join: %v", err)
	}
	if err := e.srv.BanChanged(ctx, Ban{Room: "r", Target: "bob"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dialErr(JoinOptions{Room: "r", Device: "b", Token: bobTok}, e.clientConfig()); err != nil {
		t.Fatalf("bob after the lift: %v", err)
	}
	// Local changes are stored, in order; the remote ones were not.
	if _, err := e.srv.Ban(ctx, Ban{Room: "r", Target: "eve"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Unban(ctx, "r", "eve"); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitTimeout, func() error {
		if got := store.got(); strings.Join(got, ",") != "put r eve,delete r eve" {
			return fmt.Errorf("stored %q", got)
		}
		return nil
	})
}
