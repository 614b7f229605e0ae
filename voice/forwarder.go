package voice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// Forwarder is the voice SFU of one server process. Create it with New, serve Handler, and Close
// it after the HTTP server stops taking requests.
type Forwarder struct {
	cfg Config
	log zerolog.Logger
	api *webrtc.API
	own *link.API // the loopback API New made when Config.API was nil
	c   *counters

	posts     chan func()
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // every session goroutine and the poller

	// Owned by the loop (run).
	rooms map[signaling.RoomID]*room
	byID  map[string]*session
	cands []candidate
	next  []signaling.Identity
}

// room is the loop's view of one room with voice sessions.
type room struct {
	id       signaling.RoomID
	sessions map[signaling.Identity]*session
	pos      map[signaling.PeerIndex]Pos
}

// New starts a forwarder.
func New(cfg Config) (*Forwarder, error) {
	if cfg.Members == nil {
		return nil, fmt.Errorf("%w: Members is required", ErrConfig)
	}
	cfg = cfg.withDefaults()
	f := &Forwarder{cfg: cfg, log: cfg.Logger.With().Str("component", "voice").Logger(), api: cfg.API, c: newCounters(),
		posts: make(chan func(), 256), quit: make(chan struct{}), done: make(chan struct{}),
		rooms: map[signaling.RoomID]*room{}, byID: map[string]*session{}}
	if f.api == nil {
		own, err := link.NewAPI(link.Config{Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		if f.api, err = NewMediaAPI(own); err != nil {
			_ = own.Close()
			return nil, err
		}
		f.own = own
		if f.cfg.Flush == nil {
			f.cfg.Flush = own.Flush
		}
	}
	if err := f.c.register(cfg.Registerer); err != nil {
		if f.own != nil {
			_ = f.own.Close()
		}
		return nil, err
	}
	go f.run()
	if cfg.Positions != nil && cfg.Radius > 0 {
		f.wg.Add(1)
		go f.poll()
	}
	return f, nil
}

// Close ends every session (bye "shutdown") and waits for the forwarder's goroutines. Idempotent.
func (f *Forwarder) Close() error {
	f.closeOnce.Do(func() {
		close(f.quit)
		<-f.done
		f.wg.Wait()
		if f.own != nil {
			_ = f.own.Close()
		}
	})
	return nil
}

// post runs fn on the loop; false when the forwarder is closed.
func (f *Forwarder) post(fn func()) bool {
	select {
	case f.posts <- fn:
		return true
	case <-f.done:
		return false
	}
}

// call runs fn on the loop and waits for it.
func call[T any](f *Forwarder, fn func() T) (T, bool) {
	ch := make(chan T, 1)
	if !f.post(func() { ch <- fn() }) {
		var zero T
		return zero, false
	}
	select {
	case v := <-ch:
		return v, true
	case <-f.done:
		var zero T
		return zero, false
	}
}

func (f *Forwarder) run() {
	defer close(f.done)
	tick := time.NewTicker(f.cfg.Interval)
	defer tick.Stop()
	levels := time.NewTicker(f.cfg.LevelInterval)
	defer levels.Stop()
	for {
		select {
		case fn := <-f.posts:
			fn()
		case <-tick.C:
			for _, r := range f.rooms {
				f.checkMembers(r)
				f.reselect(r)
			}
		case <-levels.C:
			for _, r := range f.rooms {
				f.sendLevels(r)
			}
		case <-f.quit:
			for _, s := range f.byID {
				f.end(s, ByeShutdown)
			}
			return
		}
	}
}

// add registers s, replacing its member's session, within the room's bound (loop).
func (f *Forwarder) add(s *session) error {
	r := f.rooms[s.room]
	if r == nil {
		r = &room{id: s.room, sessions: map[signaling.Identity]*session{}, pos: map[signaling.PeerIndex]Pos{}}
		f.rooms[s.room] = r
	}
	old := r.sessions[s.member]
	if old == nil && len(r.sessions) >= f.cfg.MaxSessions {
		if len(r.sessions) == 0 {
			delete(f.rooms, s.room)
		}
		return fmt.Errorf("%w: %d sessions (--voice-max-sessions)", ErrTooMany, len(r.sessions))
	}
	if old != nil {
		f.end(old, ByeReplaced)
		f.c.result("replaced")
	}
	r.sessions[s.member] = s
	f.byID[s.id] = s
	f.c.sessions.Add(1)
	f.c.result("created")
	f.reselect(r)
	return nil
}

// end closes session s (loop): bye with reason, its slots emptied, its PeerConnection closed.
func (f *Forwarder) end(s *session, reason string) {
	if s.ended || f.byID[s.id] != s { // ended, or refused before it was added (open closes it)
		s.ended = true
		return
	}
	s.ended = true
	delete(f.byID, s.id)
	f.c.sessions.Add(-1)
	if r := f.rooms[s.room]; r != nil && r.sessions[s.member] == s {
		delete(r.sessions, s.member)
		if len(r.sessions) == 0 {
			delete(f.rooms, s.room)
			if f.cfg.Positions != nil {
				f.cfg.Positions.Forget(s.room)
			}
		} else {
			f.reselect(r) // others' slots it held
		}
	}
	for _, sl := range s.slots {
		sl.setSpeaker(nil)
	}
	if s.pub != nil {
		empty := []*slot{}
		s.pub.fanout.Store(&empty)
	}
	f.send(s, serverMsg{T: msgBye, Reason: reason})
	f.log.Debug().Str("room", string(s.room)).Str("member", string(s.member)).Str("reason", reason).Msg("voice session ended")
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if s.rw != nil {
			// The bye must arrive before the connection ends: the client closes its channel when
			// it reads it (ending readChannel), or byeLinger passes.
			t := time.NewTimer(byeLinger)
			select {
			case <-s.chanDone:
			case <-t.C:
			}
			t.Stop()
			_ = s.rw.Close()
		}
		_ = s.pc.Close()
	}()
}

// checkMembers ends the sessions of members that left the room (loop).
func (f *Forwarder) checkMembers(r *room) {
	for id, s := range r.sessions {
		idx, ok := f.cfg.Members.MemberIndex(r.id, id)
		if !ok {
			f.end(s, ByeLeft)
			continue
		}
		s.index = idx
	}
}

// reselect chooses each listener's speakers in r, assigns them to slots, and republishes the
// speakers' fan-outs when anything changed (loop).
func (f *Forwarder) reselect(r *room) {
	f.cands = f.cands[:0]
	for id, s := range r.sessions {
		if s.pub != nil && !s.pub.listenOnly && !s.pub.muted.Load() {
			f.cands = append(f.cands, candidate{id: id, pos: r.pos[s.index]})
		}
	}
	speakers := f.cands
	changed := false
	var buf []candidate
	for id, s := range r.sessions {
		if len(s.slots) == 0 {
			continue
		}
		others := make([]candidate, 0, len(speakers))
		for _, c := range speakers {
			if c.id != id {
				others = append(others, c)
			}
		}
		buf = nearest(buf, r.pos[s.index], others, f.cfg.Radius, len(s.slots))
		if cap(f.next) < len(s.slots) {
			f.next = make([]signaling.Identity, len(s.slots))
		}
		next := f.next[:len(s.slots)]
		if !assign(s.speakers, buf, next) {
			continue
		}
		changed = true
		for i, sp := range next {
			if sp != s.speakers[i] {
				var p *publisher
				if o := r.sessions[sp]; sp != "" && o != nil {
					p = o.pub
				}
				s.slots[i].setSpeaker(p)
			}
		}
		copy(s.speakers, next)
		f.log.Debug().Str("room", string(r.id)).Str("listener", string(s.member)).Interface("speakers", next).Int("candidates", len(others)).Msg("voice slots")
		f.sendSlots(s)
	}
	if !changed {
		return
	}
	fan := map[*publisher][]*slot{}
	for _, s := range r.sessions {
		for _, sl := range s.slots {
			if p := sl.current(); p != nil {
				fan[p] = append(fan[p], sl)
			}
		}
	}
	for _, s := range r.sessions {
		if s.pub != nil {
			list := fan[s.pub]
			if list == nil {
				list = []*slot{}
			}
			s.pub.fanout.Store(&list)
		}
	}
}

// sendSlots tells s its slot mapping (loop).
func (f *Forwarder) sendSlots(s *session) {
	m := make(map[string]*string, len(s.slots))
	for i, sl := range s.slots {
		if sp := s.speakers[i]; sp != "" {
			v := string(sp)
			m[sl.mid] = &v
		} else {
			m[sl.mid] = nil
		}
	}
	f.send(s, serverMsg{T: msgSlots, Slots: m})
}

// sendLevels tells each listener of r the levels of itself and its speakers (loop).
func (f *Forwarder) sendLevels(r *room) {
	levels := make(map[signaling.Identity]uint8, len(r.sessions))
	for id, s := range r.sessions {
		if s.pub != nil {
			levels[id] = s.pub.takeLevel()
		}
	}
	for id, s := range r.sessions {
		if s.rw == nil {
			continue
		}
		m := map[string]uint8{}
		if v, ok := levels[id]; ok {
			m[string(id)] = v
		}
		for _, sp := range s.speakers {
			if v, ok := levels[sp]; ok && sp != "" {
				m[string(sp)] = v
			}
		}
		if len(m) > 0 {
			f.send(s, serverMsg{T: msgLevels, Levels: m})
		}
	}
}

// byeLinger bounds how long a closing session waits for the client to close after its bye.
const byeLinger = 2 * time.Second

// maxBuffered: levels are not sent to a client whose channel holds more than this unsent.
const maxBuffered = 64 << 10

// send writes m on s's data channel if it is open (loop). A full channel skips levels.
func (f *Forwarder) send(s *session, m serverMsg) {
	if s.rw == nil {
		return // the whole mapping goes out when the channel opens
	}
	if m.T == msgLevels && s.dc.BufferedAmount() > maxBuffered {
		return
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	if _, err := s.rw.WriteDataChannel(b, true); err != nil {
		f.log.Debug().Err(err).Str("member", string(s.member)).Msg("voice message not sent")
	}
}

// poll reads positions every Interval and posts them to the loop; it never runs on the loop
// because Locate may wait on a peer's loop.
func (f *Forwarder) poll() {
	defer f.wg.Done()
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	type want struct {
		room signaling.RoomID
		idx  []signaling.PeerIndex
	}
	for {
		select {
		case <-f.quit:
			return
		case <-t.C:
		}
		wants, ok := call(f, func() []want {
			out := make([]want, 0, len(f.rooms))
			for _, r := range f.rooms {
				w := want{room: r.id}
				for _, s := range r.sessions {
					w.idx = append(w.idx, s.index)
				}
				out = append(out, w)
			}
			return out
		})
		if !ok {
			return
		}
		for _, w := range wants {
			out := make([]Pos, len(w.idx))
			ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Interval*5)
			err := f.cfg.Positions.Locate(ctx, w.room, w.idx, out)
			cancel()
			if err != nil {
				f.log.Debug().Err(err).Str("room", string(w.room)).Msg("voice positions not read")
				continue
			}
			f.post(func() {
				r := f.rooms[w.room]
				if r == nil {
					return
				}
				for i, idx := range w.idx {
					if r.pos[idx] != out[i] {
						f.log.Debug().Str("room", string(w.room)).Uint64("peer", uint64(idx)).Interface("pos", out[i]).Msg("voice position")
					}
					r.pos[idx] = out[i]
				}
				f.reselect(r)
			})
		}
	}
}

// newSessionID returns 32 random hex digits.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
