package voice

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"
)

// Defaults of KeepConfig (docs/protocol.md §10 "A forwarder failing").
const (
	DefaultKeepGrace       = 2 * time.Second
	DefaultKeepRedialMin   = 250 * time.Millisecond
	DefaultKeepRedialMax   = 5 * time.Second
	DefaultKeepMaxAttempts = 20
	keepDialTimeout        = 15 * time.Second
	keepCheck              = 100 * time.Millisecond
)

// KeepConfig configures Keep.
type KeepConfig struct {
	// Dial is each session's configuration; its Server and Publish are set per dial.
	Dial DialConfig
	// Servers is the node list the member was given (its signaling's): a session is opened
	// through the node that served the last one, else the next in turn. Required.
	Servers []string
	// Publish, when set, gives each session its microphone stream (a session consumes its
	// reader). Default nil: listen only.
	Publish func() io.Reader
	// Grace is how long the connection may stay disconnected before the session is taken for
	// failed. Default 2 s.
	Grace time.Duration
	// RedialMin and RedialMax bound the backoff between failed dials (doubling). Default 250 ms
	// and 5 s.
	RedialMin, RedialMax time.Duration
	// MaxAttempts bounds the dials in a row that fail before Keep gives up. Default 20.
	MaxAttempts int
}

// Keeper is a voice session that re-opens itself when its forwarder fails: the connection
// failing (or disconnected beyond the grace), or the forwarder's bye, makes it POST again, to
// the node list, with backoff, until a session opens or MaxAttempts dials in a row failed. A
// room's forwarder is its owner node's (docs/protocol.md §10 "In a cluster"): when that node
// dies the room moves, the member's signaling resumes on a survivor, and the new owner's
// forwarder takes the session.
type Keeper struct {
	cfg  KeepConfig
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex // guards the following
	sessions []*Client
	err      error
}

// errPermanent marks the refusals a redial cannot cure (the token, the offer).
func permanent(err error) bool {
	var re *RefusalError
	if !errors.As(err, &re) {
		return false
	}
	switch re.Status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return false
}

// Keep opens a session and keeps one open until ctx ends or Close.
func Keep(ctx context.Context, cfg KeepConfig) *Keeper {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultKeepGrace
	}
	if cfg.RedialMin <= 0 {
		cfg.RedialMin = DefaultKeepRedialMin
	}
	if cfg.RedialMax < cfg.RedialMin {
		cfg.RedialMax = max(DefaultKeepRedialMax, cfg.RedialMin)
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultKeepMaxAttempts
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Keeper{cfg: cfg, stop: cancel, done: make(chan struct{})}
	go k.run(ctx)
	return k
}

func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	if len(k.cfg.Servers) == 0 {
		k.fail(errors.New("voice: Keep needs Servers"))
		return
	}
	next, backoff, failed := 0, k.cfg.RedialMin, 0
	for ctx.Err() == nil {
		dc := k.cfg.Dial
		dc.Server = k.cfg.Servers[next%len(k.cfg.Servers)]
		dc.Publish = nil
		if k.cfg.Publish != nil {
			dc.Publish = k.cfg.Publish()
		}
		dctx, cancel := context.WithTimeout(ctx, keepDialTimeout)
		c, err := Dial(dctx, dc)
		cancel()
		if err != nil {
			failed++
			k.cfg.Dial.Logger.Debug().Err(err).Str("server", dc.Server).Int("attempt", failed).Msg("voice: dial failed")
			if permanent(err) || failed >= k.cfg.MaxAttempts || ctx.Err() != nil {
				k.fail(err)
				return
			}
			next++ // another node may serve it (an edge relays to the owner)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			backoff = min(2*backoff, k.cfg.RedialMax)
			continue
		}
		failed, backoff = 0, k.cfg.RedialMin
		k.mu.Lock()
		k.sessions = append(k.sessions, c)
		k.mu.Unlock()
		why := k.watch(ctx, c)
		k.cfg.Dial.Logger.Debug().Str("server", dc.Server).Str("why", why).Msg("voice: session ended, redialing")
		go c.Close() //nolint:errcheck // its DELETE may wait on a dead node; the redial does not
	}
}

// watch returns when c's session has failed (why) or ctx ended.
func (k *Keeper) watch(ctx context.Context, c *Client) string {
	t := time.NewTicker(keepCheck)
	defer t.Stop()
	var since time.Time // disconnected since
	for {
		select {
		case <-ctx.Done():
			return "closed"
		case <-t.C:
		}
		if bye := c.Bye(); bye != "" {
			return "bye: " + bye
		}
		switch st := c.pc.ConnectionState(); st {
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			return "connection " + st.String()
		case webrtc.PeerConnectionStateDisconnected:
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) > k.cfg.Grace {
				return "disconnected beyond the grace"
			}
		default:
			since = time.Time{}
		}
	}
}

func (k *Keeper) fail(err error) {
	k.mu.Lock()
	k.err = err
	k.mu.Unlock()
}

// Sessions returns every session opened so far, the current one last.
func (k *Keeper) Sessions() []*Client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*Client(nil), k.sessions...)
}

// Err is why the keeper gave up, nil while it keeps a session.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Close ends the current session and stops re-opening.
func (k *Keeper) Close() error {
	k.stop()
	<-k.done
	for _, c := range k.Sessions() {
		_ = c.Close()
	}
	return nil
}
