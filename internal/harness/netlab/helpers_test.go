package netlab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
)

// The server every scenario starts, with the flags of README's "Deploy".
var (
	serverHTTP = netlab.ServerAddr.String() + ":7880"
	serverURL  = "http://" + serverHTTP
	turnAddr   = netlab.ServerAddr.String() + ":3478"
	serveArgs  = []string{"serve", "--data", "", "--addr", serverHTTP, "--public-ip", netlab.ServerAddr.String(),
		"--turn", turnAddr, "--turn-allow-private", "100.64.0.0/10"}
)

var built struct {
	once sync.Once
	path string
	err  error
}

// concord builds cmd/concord once per test binary, into the lab's TempDir, and returns its
// path. GOPROXY=off: inside the lab there is no module proxy, and the build must not try one.
func concord(t *testing.T) string {
	t.Helper()
	lab := netlab.Get(t)
	built.once.Do(func() {
		built.path = filepath.Join(lab.TempDir(), "concord")
		cmd := exec.Command("go", "build", "-o", built.path, "github.com/concordrtc/concord/cmd/concord")
		cmd.Env = append(os.Environ(), "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/concord: %w\n%s", err, out)
			return
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// proc is a concord process in a lab namespace.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  syncbuf.Buffer
	done chan struct{}
	err  error
}

// start runs bin with args in ns until the test ends (SIGTERM, then SIGKILL after 5 s).
func start(t *testing.T, ns netlab.NS, name, bin string, args ...string) *proc {
	t.Helper()
	return startEnv(t, ns, nil, name, bin, args...)
}

// startEnv is start with extra environment variables.
func startEnv(t *testing.T, ns netlab.NS, env []string, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{}), out: syncbuf.Buffer{Limit: 16 << 20}}
	p.cmd = ns.Command(context.Background(), bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if d := os.Getenv("CONCORD_LAB_DUMP"); d != "" { // a debugging aid: every process's whole output
			_ = os.MkdirAll(d, 0o755)
			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("%s-%d.log", name, p.cmd.Process.Pid)), []byte(p.out.String()), 0o644)
		}
		if t.Failed() {
			t.Logf("--- %s (%s %s), last output:\n%s", name, ns, strings.Join(args, " "), tail(&p.out, 40))
		}
	})
	return p
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill9 sends SIGKILL and waits until the process is gone.
func (p *proc) kill9() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n lines, of which at most the last is a browser's status line.
// tail returns the last n lines of b, of which at most the last is a browser's status line.
func tail(b *syncbuf.Buffer, n int) string {
	all := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	lines := all[:0:0]
	for i, l := range all {
		if !strings.HasPrefix(l, "status ") || i == len(all)-1 {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// serve starts `concord serve` with serveArgs plus extra in the server's namespace and waits
// until it answers.
func serve(t *testing.T, lab *netlab.Lab, extra ...string) *proc {
	t.Helper()
	return serveEnv(t, lab, nil, extra...)
}

// serveEnv is serve with extra environment variables.
func serveEnv(t *testing.T, lab *netlab.Lab, env []string, extra ...string) *proc {
	t.Helper()
	p := startEnv(t, lab.Server, env, "serve", concord(t), append(append([]string{}, serveArgs...), extra...)...)
	p.waitHealthy(t, serverURL, 15*time.Second)
	return p
}

// waitHealthy waits until the serve process p answers base/healthz, failing t if it exits first.
func (p *proc) waitHealthy(t *testing.T, base string, d time.Duration) {
	t.Helper()
	waitFor(t, d, p.name+" to answer /healthz", func() error {
		if p.exited() {
			return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, tail(&p.out, 20))
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// waitFor polls cond until it returns nil, failing t with the last error after d.
var waitFor = poll.Until

// waitHost waits until room arena's host is a synced member of kind, and returns the term.
func waitHost(t *testing.T, kind string) uint64 {
	t.Helper()
	return plain.waitHost(t, kind)
}

func (a *api) waitHost(t *testing.T, kind string) uint64 {
	t.Helper()
	var term uint64
	waitFor(t, 20*time.Second, "a "+kind+" to be elected host", func() error {
		r, err := a.room(a.watched())
		if err != nil {
			return err
		}
		if h := r.hostMember(); h == nil || h.Kind != kind || !h.Synced {
			return fmt.Errorf("%v", r)
		}
		term = r.Term
		return nil
	})
	return term
}

// room is a room of GET /api/rooms.
type room struct {
	Room    string   `json:"room"`
	Term    uint64   `json:"term"`
	Host    int      `json:"host"`
	Members []member `json:"members"`
}

type member struct {
	PeerIndex int    `json:"peerIndex"`
	PeerID    string `json:"peerId"`
	Kind      string `json:"kind"`
	Synced    bool   `json:"synced"`
	Replica   *struct {
		Term     uint64 `json:"term"`
		Entities int    `json:"entities"`
		Hash     string `json:"hash"`
	} `json:"replica"`
	Link *linkTypes `json:"link"`
}

type linkTypes struct {
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

func (l *linkTypes) String() string {
	if l == nil {
		return "none"
	}
	return l.Local + "/" + l.Remote
}

// relayed reports whether the pair goes through a TURN relay on either end.
func (l *linkTypes) relayed() bool { return l != nil && (l.Local == "relay" || l.Remote == "relay") }

func (r *room) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "term %d host %d:", r.Term, r.Host)
	for _, m := range r.Members {
		fmt.Fprintf(&b, " %d:%s", m.PeerIndex, m.Kind)
		if !m.Synced {
			b.WriteString("(unsynced)")
		}
		if m.Replica != nil {
			fmt.Fprintf(&b, "=%s@t%d/%de", m.Replica.Hash, m.Replica.Term, m.Replica.Entities)
		}
		if m.PeerIndex != r.Host {
			fmt.Fprintf(&b, "[%v]", m.Link)
		}
	}
	return b.String()
}

func (r *room) hostMember() *member {
	for i := range r.Members {
		if r.Members[i].PeerIndex == r.Host {
			return &r.Members[i]
		}
	}
	return nil
}

// api reads a server's HTTP APIs.
type api struct {
	base   string
	client *http.Client
	// bearer goes in "Authorization: Bearer" (a join token, on a server with a secret).
	bearer string
	// roomName is the room converged and waitHost watch; default "arena".
	roomName string
}

func (a *api) watched() string {
	if a.roomName == "" {
		return "arena"
	}
	return a.roomName
}

// plain is the API of the scenarios' server (serveArgs, plain HTTP, open).
var plain = &api{base: serverURL, client: http.DefaultClient}

// get fetches path and returns the response of a 200, or an error.
func (a *api) get(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	if a.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+a.bearer)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: status %d", path, resp.StatusCode)
	}
	return resp, nil
}

func (a *api) room(name string) (*room, error) {
	resp, err := a.get("/api/rooms")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rooms []room
	if err := json.NewDecoder(resp.Body).Decode(&rooms); err != nil {
		return nil, err
	}
	for i := range rooms {
		if rooms[i].Room == name {
			return &rooms[i], nil
		}
	}
	return nil, errors.New("no room " + name)
}

// converged waits until room arena has n members, all synced in the room's term with one hash
// and (if entities > 0) that many entities, the same for a whole second, and check holds; it
// returns the room.
func converged(t *testing.T, n, entities int, d time.Duration, check func(*room) error) *room {
	t.Helper()
	return plain.converged(t, n, entities, d, check)
}

func (a *api) converged(t *testing.T, n, entities int, d time.Duration, check func(*room) error) *room {
	t.Helper()
	var key string
	var since time.Time
	var last *room
	waitFor(t, d, fmt.Sprintf("%d members converged", n), func() error {
		r, err := a.room(a.watched())
		if err != nil {
			return err
		}
		if len(r.Members) != n || r.hostMember() == nil {
			return fmt.Errorf("%v", r)
		}
		hashes := map[string]bool{}
		for _, m := range r.Members {
			if !m.Synced || m.Replica == nil || m.Replica.Term != r.Term || (entities > 0 && m.Replica.Entities != entities) {
				return fmt.Errorf("%v", r)
			}
			hashes[m.Replica.Hash] = true
		}
		if len(hashes) != 1 {
			return fmt.Errorf("%v", r)
		}
		if check != nil {
			if err := check(r); err != nil {
				return fmt.Errorf("%w: %v", err, r)
			}
		}
		k := fmt.Sprintf("%d/%s", r.Term, r.Members[0].Replica.Hash)
		if k != key {
			key, since = k, time.Now()
			return fmt.Errorf("converged at %s, waiting a second to see it hold: %v", k, r)
		}
		if time.Since(since) < time.Second {
			return fmt.Errorf("converged at %s for %v: %v", k, time.Since(since), r)
		}
		last = r
		return nil
	})
	return last
}

// allRelayed checks that every member but the host reaches the host through a TURN relay.
func allRelayed(r *room) error {
	for _, m := range r.Members {
		if m.PeerIndex != r.Host && !m.Link.relayed() {
			return fmt.Errorf("member %d's link is %v, not through the relay", m.PeerIndex, m.Link)
		}
	}
	return nil
}
