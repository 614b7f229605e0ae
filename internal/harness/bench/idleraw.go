package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
)

// The idle benchmark's raw baseline in two processes: a raw host process (`concord
// bench-rawhost`, RunRawHost) answers one link.Conn per member, with the API a bench host's
// peer uses (link.NewAPI: the same SettingEngine, loopback only), and the other ends are offerers
// in the bench process, each with an API of its own as a bench member has. Nothing but the
// links' own keepalives travels. Its signals cross the process boundary as JSON lines
// (rawHostSignal) on the raw host's standard input and output.
//
// Why: the one-process baseline (dialRawPairs) pays pion's per-packet work once for both ends,
// in one runtime; Concord's host and members pay it in two. This baseline has Concord's shape,
// so its host process is what "what an idle member costs a host" is judged against.

// rawHostSignal is one signal of link i, on the raw host's standard input (to its answerer) or
// standard output (from it).
type rawHostSignal struct {
	Link   int         `json:"i"`
	Signal link.Signal `json:"s"`
}

// signalLines writes rawHostSignals as JSON lines on its own goroutine, so that a Conn's Signal
// callback never blocks on the pipe (link.ConnConfig.Signal must not block for long).
type signalLines struct {
	q    chan rawHostSignal
	done chan struct{}
	err  error // of the first failed write; read after done
}

// newSignalLines queues up to 16 signals a link (an offer or answer, a few loopback candidates
// and their end, with room to spare): the queue is what a link's set-up may have in flight.
func newSignalLines(w io.Writer, n int) *signalLines {
	sl := &signalLines{q: make(chan rawHostSignal, 16*n), done: make(chan struct{})}
	go func() {
		defer close(sl.done)
		enc := json.NewEncoder(w) // one line a value
		for s := range sl.q {
			if sl.err == nil {
				sl.err = enc.Encode(s)
			}
		}
	}()
	return sl
}

// signal returns link i's Signal callback.
func (sl *signalLines) signal(i int) func(link.Signal) error {
	return func(s link.Signal) error {
		select {
		case sl.q <- rawHostSignal{Link: i, Signal: s}:
			return nil
		default:
			return errors.New("raw host signal queue full")
		}
	}
}

// close stops the writer after what is queued; no signal may be sent after it.
func (sl *signalLines) close() {
	close(sl.q)
	<-sl.done
}

// rawHostReady is the line a raw host says on RawHostOptions.SettleOut once it settles on SIGUSR1.
const rawHostReady = "bench-rawhost ready"

// RawHostOptions configures RunRawHost.
type RawHostOptions struct {
	// SettleOut, when not nil, makes the raw host settle its memory on SIGUSR1 and say
	// "bench-host settled N" on it, as HostOptions.SettleOut.
	SettleOut io.Writer
	// SettleProfile, when not empty, receives a heap profile at every settle (the last one
	// stays), as HostOptions.SettleProfile.
	SettleProfile string
	// WindowProfile, when not empty, is the file that receives a CPU profile from one SIGUSR2 to
	// the next (the idle benchmark's window), said on SettleOut, as HostOptions.WindowProfile.
	WindowProfile string
}

// RunRawHost runs the raw host process of the idle benchmark: it reads rawHostSignals from in,
// answers link i on its first signal (0 ≤ i < MaxIdleMembers), writes its answerers' signals to
// out, and holds the links until in ends or ctx does.
func RunRawHost(ctx context.Context, o RawHostOptions, in io.Reader, out io.Writer, log zerolog.Logger) error {
	pion := pionLogger(log)
	api, err := link.NewAPI(link.Config{Logger: pion})
	if err != nil {
		return err
	}
	defer api.Close()
	if o.SettleOut != nil {
		defer onSignals(o.SettleOut, o.SettleProfile, o.WindowProfile, log)()
		// Said once SIGUSR1 is handled: the benchmark settles this process before its links.
		fmt.Fprintln(o.SettleOut, rawHostReady)
	}
	sl := newSignalLines(out, MaxIdleMembers)
	defer sl.close() // after the links: their goroutines may still signal
	conns := make(map[int]*link.Conn)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	lines := make(chan rawHostSignal)
	readErr := make(chan error, 1)
	go func() {
		// Ends with in (the bench process closes it) or with a bad line.
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var s rawHostSignal
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				readErr <- fmt.Errorf("raw host: bad signal line: %w", err)
				return
			}
			select {
			case lines <- s:
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return err
		case s := <-lines:
			if s.Link < 0 || s.Link >= MaxIdleMembers {
				return fmt.Errorf("raw host: link %d out of [0, %d)", s.Link, MaxIdleMembers)
			}
			c := conns[s.Link]
			if c == nil {
				if c, err = api.NewAnswerer(link.ConnConfig{Signal: sl.signal(s.Link), Logger: pion}); err != nil {
					return err
				}
				conns[s.Link] = c
			}
			if err := c.HandleSignal(s.Signal); err != nil {
				log.Warn().Err(err).Int("link", s.Link).Msg("raw host: signal")
			}
		}
	}
}

// rawHostLinks is the bench process's side of the two-process baseline: the raw host process
// and an offerer (with its own API) for each of its links.
type rawHostLinks struct {
	hp    *hostProc
	host0 int64        // the raw host's settled resident set before its links
	sl    *signalLines // to the raw host's standard input
	apis  []*link.API
	conns []*link.Conn
	pr    *io.PipeReader
	read  sync.WaitGroup
}

// dialRawHost starts the raw host process (cmd, from RawHostCommand), connects n links to it and
// waits until every one is open on this side.
func dialRawHost(ctx context.Context, cmd *exec.Cmd, n int, pion zerolog.Logger) (*rawHostLinks, error) {
	cmd.Args = append(cmd.Args, "-log-level", "warn")
	pr, pw := io.Pipe()
	hp, err := startBenchHost(cmd, pw)
	if err != nil {
		return nil, err
	}
	rl := &rawHostLinks{hp: hp, sl: newSignalLines(hp.stdin, n), pr: pr}
	rl.read.Add(1)
	var mu sync.Mutex // guards conns: the reader may see an answer before NewOfferer has returned
	rl.conns = make([]*link.Conn, n)
	go func() {
		defer rl.read.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var s rawHostSignal
			if json.Unmarshal(sc.Bytes(), &s) != nil || s.Link < 0 || s.Link >= n {
				continue
			}
			mu.Lock()
			c := rl.conns[s.Link]
			mu.Unlock()
			if c != nil {
				_ = c.HandleSignal(s.Signal)
			}
		}
		_, _ = io.Copy(io.Discard, pr) // the process's output to its end (close closes pr)
	}()
	// The raw host's resident set before its links, settled, as the Concord host's is read
	// before its members join.
	if err := hp.waitSaid(ctx, "the raw host ready", rawHostReady+"\n"); err != nil {
		rl.close()
		return nil, fmt.Errorf("%w\n%s", err, hp.out)
	}
	if err := hp.settle(ctx); err != nil {
		rl.close()
		return nil, fmt.Errorf("%w\n%s", err, hp.out)
	}
	rl.host0, _ = procRSS(hp.cmd.Process.Pid)
	for range n {
		api, err := link.NewAPI(link.Config{Logger: pion})
		if err != nil {
			rl.close()
			return nil, err
		}
		rl.apis = append(rl.apis, api)
	}
	for i := range n {
		mu.Lock()
		c, err := rl.apis[i].NewOfferer(link.ConnConfig{Signal: rl.sl.signal(i), Logger: pion})
		rl.conns[i] = c
		mu.Unlock()
		if err != nil {
			rl.close()
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(n)*100*time.Millisecond)
	defer cancel()
	for _, c := range rl.conns {
		if err := c.WaitReady(rctx); err != nil {
			rl.close()
			return nil, fmt.Errorf("raw host link not ready: %w\n%s", err, hp.out)
		}
	}
	return rl, nil
}

// close closes this side's links, ends the raw host (the end of its standard input) and its
// output's reader.
func (rl *rawHostLinks) close() {
	for _, c := range rl.conns {
		if c != nil {
			_ = c.Close()
		}
	}
	rl.sl.close()
	rl.hp.stop(10 * time.Second)
	_ = rl.pr.Close()
	rl.read.Wait()
	for _, a := range rl.apis {
		_ = a.Close()
	}
}
