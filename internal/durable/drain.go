package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// A cluster stopped whole (every node sent SIGTERM at once) must still write each room's last
// checkpoint, and a write needs a quorum of the checkpoint stream's replicas. A node that wrote
// its own quickly and shut its embedded server down would take that quorum from the nodes still
// writing, and their rooms would reopen from an older checkpoint. So a stopping node says so on
// stopSubject (Stopping), and Close, before it shuts the embedded server down, waits until every
// other node that said it is stopping has said it is done, for at most Config.Linger.

// stopSubject carries stopNotice messages between the nodes of a cluster.
const stopSubject = "concord.store.stop"

// DefaultLinger bounds how long Close waits for other stopping nodes when Config.Linger is zero.
const DefaultLinger = 2 * time.Second

// noticeGrace is the least time between Stopping and the shutdown of the embedded server: the
// notices of nodes told to stop at about the same moment are still on their way.
const noticeGrace = 500 * time.Millisecond

// stopNotice says that Node began stopping (Done false) or has written what it had (Done true).
type stopNotice struct {
	Node string `json:"node"`
	Done bool   `json:"done"`
}

// ErrBadStopNotice: a stop notice from another node that is too long, not JSON, or names no node.
var ErrBadStopNotice = errors.New("durable: bad stop notice")

// maxStopNotice bounds a stop notice's bytes (a node name is at most 256 bytes).
const maxStopNotice = 512

// decodeStopNotice reads another node's stop notice.
func decodeStopNotice(b []byte) (stopNotice, error) {
	var n stopNotice
	if len(b) > maxStopNotice {
		return n, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadStopNotice, len(b), maxStopNotice)
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return stopNotice{}, fmt.Errorf("%w: %v", ErrBadStopNotice, err)
	}
	if n.Node == "" || len(n.Node) > 256 {
		return stopNotice{}, fmt.Errorf("%w: node name of %d bytes", ErrBadStopNotice, len(n.Node))
	}
	return n, nil
}

// watchStops subscribes to the other nodes' stop notices (an embedded, clustered server only).
func (s *Store) watchStops() error {
	s.stopping = map[string]bool{}
	s.stopsChanged = make(chan struct{}, 1)
	sub, err := s.nc.Subscribe(stopSubject, func(m *nats.Msg) {
		n, err := decodeStopNotice(m.Data)
		if err != nil || n.Node == s.cfg.NodeName {
			return
		}
		s.stopMu.Lock()
		if n.Done {
			delete(s.stopping, n.Node)
		} else if len(s.stopping) < 64 {
			s.stopping[n.Node] = true
		}
		s.stopMu.Unlock()
		select {
		case s.stopsChanged <- struct{}{}:
		default:
		}
	})
	s.stopSub = sub
	return err
}

// Stopping tells the other nodes that this one is stopping: their Close waits for its last
// checkpoints (see Close). Call it when the node begins to stop, before its hosts write their
// last checkpoints. It does nothing outside an embedded cluster.
func (s *Store) Stopping() {
	s.stopMu.Lock()
	s.stopBegan = time.Now()
	s.stopMu.Unlock()
	s.announceStop(false)
}

func (s *Store) announceStop(done bool) {
	if s.stopSub == nil {
		return
	}
	data, _ := json.Marshal(stopNotice{Node: s.cfg.NodeName, Done: done})
	if s.nc.Publish(stopSubject, data) == nil {
		_ = s.nc.FlushTimeout(500 * time.Millisecond)
	}
}

// lingerForStops says this node is done and waits until no other node is stopping, at most
// Config.Linger.
func (s *Store) lingerForStops() {
	if s.stopSub == nil {
		return
	}
	s.announceStop(true)
	deadline := time.NewTimer(s.cfg.Linger)
	defer deadline.Stop()
	s.stopMu.Lock()
	began := s.stopBegan
	s.stopMu.Unlock()
	if began.IsZero() {
		began = time.Now()
	}
	grace := time.NewTimer(time.Until(began.Add(noticeGrace)))
	defer grace.Stop()
	graceOver := false
	for {
		s.stopMu.Lock()
		waiting := len(s.stopping)
		s.stopMu.Unlock()
		if waiting == 0 && graceOver {
			break
		}
		select {
		case <-grace.C:
			graceOver = true
		case <-s.stopsChanged:
		case <-deadline.C:
			s.log.Warn().Int("nodes", waiting).Dur("waited", s.cfg.Linger).Msg("other nodes still stopping; shutting down anyway")
			return
		}
	}
}
