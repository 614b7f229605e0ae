package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/concordrtc/concord/internal/turnserver"
	"github.com/concordrtc/concord/signaling"
)

// relay is the TURN relay of FanoutOptions.Relay and MigrationOptions.Relay (`concord bench
// fanout|migration -relay`): a `concord serve --turn` child process on loopback (its own process,
// so that its CPU can be told apart), whose REST credentials the bench's signaling hands to every
// member.
type relay struct {
	cmd      *exec.Cmd
	done     chan struct{}
	turnAddr string
	httpURL  string
	key      []byte
	// admin is the relay's CONCORD_ADMIN_KEY: with a secret, /metrics answers only it.
	admin string
}

// startRelay starts the relay, if on, and waits until it answers; every address is on
// loopback. Off, it returns nil, which stop and mark accept. command makes the command of
// `concord serve` with args; nil runs this executable.
func startRelay(ctx context.Context, on bool, command func(args []string) *exec.Cmd) (*relay, error) {
	if !on {
		return nil, nil
	}
	if command == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		command = func(args []string) *exec.Cmd { return exec.Command(exe, args...) }
	}
	turnPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	secret, admin := make([]byte, 16), make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	if _, err := rand.Read(admin); err != nil {
		return nil, err
	}
	r := &relay{
		done:     make(chan struct{}),
		turnAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(turnPort)),
		httpURL:  "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
		key:      turnserver.DeriveKey([]byte(hex.EncodeToString(secret))),
		admin:    hex.EncodeToString(admin),
	}
	r.cmd = command([]string{"serve", "--data", "", "--addr", strings.TrimPrefix(r.httpURL, "http://"), "--dedicated-host=false",
		"--turn", r.turnAddr, "--turn-allow-private", "127.0.0.0/8", "--log-level", "error",
		// Every bot is on 127.0.0.1 under one user: the per-address and per-token caps would refuse
		// all but the first few.
		"--turn-max-allocs-per-addr", "1000000", "--turn-max-allocs-per-token", "1000000"})
	r.cmd.Env = append(r.cmd.Environ(), "CONCORD_SECRET="+hex.EncodeToString(secret), "CONCORD_ADMIN_KEY="+r.admin)
	r.cmd.Stdout, r.cmd.Stderr = os.Stderr, os.Stderr
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench relay: %w", err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	if err := wait(ctx, 10*time.Second, "bench relay answering", r.exited, func() error {
		resp, err := http.Get(r.httpURL + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *relay) exited() error {
	select {
	case <-r.done:
		return errors.New("bench relay: the serve process exited")
	default:
		return nil
	}
}

// stop ends the relay process and waits for it.
func (r *relay) stop() {
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// iceServers hands every member TURN REST credentials for the relay, over UDP.
func (r *relay) iceServers(_ signaling.RoomID, id signaling.Identity) []signaling.ICEServer {
	u := turnserver.Username(string(id), time.Now().Add(time.Hour))
	return []signaling.ICEServer{{URLs: []string{"turn:" + r.turnAddr + "?transport=udp"}, Username: u, Credential: turnserver.Password(r.key, u)}}
}

// cpu is the relay process's CPU time so far (user + system, from /proc; Linux only).
func (r *relay) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start at field 3; utime and stime
	// are fields 14 and 15, in clock ticks of 1/100 s (USER_HZ).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench relay: short /proc stat %q", s)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// relayedBytes reads the relay's concord_turn_relayed_bytes_total, both directions.
func (r *relay) relayedBytes() (uint64, error) {
	req, err := http.NewRequest(http.MethodGet, r.httpURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+r.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bench relay /metrics: %s", resp.Status)
	}
	var total uint64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "concord_turn_relayed_bytes_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("bench relay /metrics: %w", err)
			}
			total += uint64(f)
		}
	}
	return total, sc.Err()
}

// relayWindow is the relay's share of a measured window.
type relayWindow struct {
	cpu   time.Duration
	bytes uint64
}

// sub is w minus an earlier mark.
func (w relayWindow) sub(earlier relayWindow) relayWindow {
	return relayWindow{cpu: w.cpu - earlier.cpu, bytes: w.bytes - earlier.bytes}
}

// mark reads the relay's counters (zero for a nil relay).
func (r *relay) mark() relayWindow {
	if r == nil {
		return relayWindow{}
	}
	c, _ := r.cpu()
	b, _ := r.relayedBytes()
	return relayWindow{cpu: c, bytes: b}
}

// freeLoopbackPort returns a port free on 127.0.0.1 for both UDP and TCP (TURN listens on both).
func freeLoopbackPort() (int, error) {
	for range 20 {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		_ = pc.Close()
		if err == nil {
			_ = ln.Close()
			return port, nil
		}
	}
	return 0, errors.New("bench relay: no port free for both UDP and TCP on 127.0.0.1")
}
