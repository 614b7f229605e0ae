package world

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Client timings.
const (
	// LeaveDelay: a region that left the view is left this long later, unless it came back,
	// so that walking along a border does not churn joins.
	LeaveDelay = 2 * time.Second
	// resendAfter: inputs not acknowledged this long after they were sent are sent again.
	resendAfter = 500 * time.Millisecond
	pumpEvery   = 20 * time.Millisecond
	// DefaultResidentSilence is Config.ResidentSilence's default: a resident region's host tells
	// its resident members every second, so five seconds without it is four lost words at least.
	DefaultResidentSilence = 5 * time.Second
)

// ErrPending reports that MaxPending inputs wait for their acknowledgement.
var ErrPending = errors.New("world: too many unacknowledged inputs")

// Config configures a world Client. Server, World and App are required.
type Config struct {
	// Server is the signaling server's URL (http://…), which also serves /api/worlds.
	Server string
	World  string
	// App is the world's game: the Client reads its Schemas and Avatar.
	App App
	// User and Device make the player's identity, the same in every region room (Device
	// default: 8 random characters, so that every Join is a player of its own).
	User, Device string
	// Token returns the join token of a region room (nil: none).
	Token func(room signaling.RoomID) (string, error)
	// Start is the region to enter first (its host decides where the player is resident).
	Start [2]int
	// Peer returns the base peer.Config of a region room's member (transport, clock); Server,
	// Room, App, User, Device and Token are set by the Client. Nil: the zero Config.
	Peer func(room signaling.RoomID) peer.Config
	// HTTP is the client of the directory requests (nil: one with a 15 s timeout).
	HTTP   *http.Client
	Logger zerolog.Logger
	// ResidentSilence is how long the resident region's host may say nothing of the player (no
	// `resident` naming it at the generation held or newer, no `ack`) before the client takes
	// the named region's own host's word whatever its generation, and, twice as long, joins its
	// region's room again to be placed anew (residentRule, docs/protocol.md §11 "Residence
	// silence"). Zero: DefaultResidentSilence.
	ResidentSilence time.Duration
	// Now is the clock of the residence silence (nil: time.Now).
	Now func() time.Time
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventResident: the player's resident region is known for the first time (To).
	EventResident EventKind = iota + 1
	// EventCrossing: the player crossed from region From to region To.
	EventCrossing
)

// Event is something that happened to the player.
type Event struct {
	Kind     EventKind
	From, To Region
	Gen      uint32
}

// Entity is one entity of the merged view.
type Entity struct {
	Region Region
	ID     peer.Entity
	Schema schema.ID
	Values [][]byte // property values in schema order (nil: absent)
	// Owner and Gen are set on avatars: the player and the handover generation.
	Owner string
	Gen   uint32
	// Writable: this player's inputs apply in the entity's region (it is resident there).
	Writable bool
}

// Client is one player in a world: a member of the region rooms around it.
type Client struct {
	cfg    Config
	def    Def
	self   string
	events chan Event
	wake   chan struct{} // capacity 1: inbox has news
	inputs chan []byte
	quit   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex // guards follows (read by View), resident, and the counters below
	follows  map[signaling.RoomID]*follow
	joining  map[signaling.RoomID]bool
	closed   bool // run has ended: no more follows
	inbox    map[signaling.RoomID]*roomNews
	resident Region
	gen      uint32
	// redirect is a region another region's host says the player is resident in, with a newer
	// generation: followed (not left) until redirectUntil, so that its own host can say so.
	redirect      Region
	redirectUntil time.Time
	pending       int
	ack           uint32 // the last acknowledged input
	dropped       int    // events dropped: the channel was full
}

type follow struct {
	r       Region
	p       *peer.Peer
	cancel  context.CancelFunc
	done    chan struct{}
	leaveAt time.Time
}

type regionMsg struct {
	room signaling.RoomID
	typ  uint8
	data []byte
}

type input struct {
	seq  uint32
	data []byte
}

// Join enters world cfg.World as a player: it reads the directory, follows its first region
// and, from there on, the regions within view of wherever the player is resident. The Client
// runs until ctx ends or Close.
func Join(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.App == nil || cfg.Server == "" {
		return nil, fmt.Errorf("%w: Config needs Server and App", ErrDef)
	}
	if cfg.User == "" {
		cfg.User = "anon"
	}
	if cfg.Device == "" {
		cfg.Device = strings.ToLower(rand.Text()[:8])
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 15 * time.Second}
	}
	if cfg.ResidentSilence <= 0 {
		cfg.ResidentSilence = DefaultResidentSilence
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var dir Directory
	if err := apiJSON(ctx, cfg.HTTP, http.MethodGet, cfg.Server, "/api/worlds/"+url.PathEscape(cfg.World), "", &dir); err != nil {
		return nil, err
	}
	def := Def{Name: dir.World, Cols: dir.Cols, Rows: dir.Rows, RegionSize: dir.RegionSize, View: dir.View, App: cfg.App}
	if err := def.Check(); err != nil {
		return nil, err
	}
	start, ok := def.Region(cfg.Start[0], cfg.Start[1])
	if !ok {
		return nil, fmt.Errorf("%w: start (%d, %d)", ErrUnknownRegion, cfg.Start[0], cfg.Start[1])
	}
	c := &Client{cfg: cfg, def: def, self: string(signaling.NewIdentity(cfg.User, cfg.Device)),
		events: make(chan Event, 256), wake: make(chan struct{}, 1), inbox: map[signaling.RoomID]*roomNews{}, inputs: make(chan []byte, MaxPending),
		quit: make(chan struct{}), follows: map[signaling.RoomID]*follow{}, joining: map[signaling.RoomID]bool{}}
	if err := c.follow(ctx, start); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		c.run(rctx)
	}()
	return c, nil
}

// Self is the player's identity ("user/device"), the owner of its avatar.
func (c *Client) Self() string { return c.self }

// Def is the world as the directory described it.
func (c *Client) Def() Def { return c.def }

// Events reports crossings (at most 256 waiting; later ones are dropped while it is full).
func (c *Client) Events() <-chan Event { return c.events }

// Resident returns the region the player is resident in; ok is false until it is known.
func (c *Client) Resident() (r Region, gen uint32, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resident, c.gen, c.gen > 0
}

// Pending returns how many inputs wait for their acknowledgement.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// Input sends one input to the player's resident region; it is kept, and sent again (to the
// region the player is resident in by then) until that region acknowledges it.
func (c *Client) Input(data []byte) error {
	if len(data) > MaxInput {
		return fmt.Errorf("%w: input of %d bytes, limit %d", peer.ErrTooLarge, len(data), MaxInput)
	}
	c.mu.Lock()
	full := c.pending >= MaxPending
	if !full {
		c.pending++
	}
	c.mu.Unlock()
	if full {
		return ErrPending
	}
	select {
	case c.inputs <- append([]byte(nil), data...):
		return nil
	case <-c.quit:
		return peer.ErrClosed
	}
}

// Close leaves every region room.
func (c *Client) Close() {
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	c.wg.Wait()
}

// Regions lists the regions the client follows.
func (c *Client) Regions() []Region {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Region, 0, len(c.follows))
	for _, f := range c.follows {
		out = append(out, f.r)
	}
	slices.SortFunc(out, func(a, b Region) int { return strings.Compare(string(a.Room()), string(b.Room())) })
	return out
}

// View returns the merged view of every followed region: each entity once, each player's avatar
// once (the copy of the highest generation).
func (c *Client) View(ctx context.Context) []Entity {
	c.mu.Lock()
	fs := make([]*follow, 0, len(c.follows))
	for _, f := range c.follows {
		fs = append(fs, f)
	}
	res := c.resident
	c.mu.Unlock()
	av := c.cfg.App.Avatar()
	var all []Entity
	for _, f := range fs {
		_ = f.p.Do(ctx, func(w *peer.World) {
			for _, e := range w.Entities() {
				sc, ok := w.SchemaOf(e)
				if !ok || e == peer.RoomEntity {
					continue
				}
				en := Entity{Region: f.r, ID: e, Schema: sc.ID, Values: make([][]byte, len(sc.Properties)), Writable: f.r == res}
				for i := range sc.Properties {
					if v, ok := w.Get(e, i); ok {
						en.Values[i] = append([]byte(nil), v...)
					}
				}
				if sc.ID == av.ID {
					en.Gen = Gen(w.Creation(e))
					if av.Owner < len(en.Values) {
						en.Owner = string(en.Values[av.Owner])
					}
				}
				all = append(all, en)
			}
		})
	}
	return Merge(all, av.ID)
}

// Merge keeps, per avatar owner, the copy of the highest generation (equal generations: the
// lowest room name), and every other entity as it is.
func Merge(all []Entity, avatar schema.ID) []Entity {
	best := map[string]int{}
	out := all[:0:0]
	for _, e := range all {
		if e.Schema != avatar || e.Owner == "" {
			out = append(out, e)
			continue
		}
		i, seen := best[e.Owner]
		if !seen {
			best[e.Owner] = len(out)
			out = append(out, e)
			continue
		}
		o := out[i]
		if e.Gen > o.Gen || e.Gen == o.Gen && e.Region.Room() < o.Region.Room() {
			out[i] = e
		}
	}
	return out
}

// load asks the server to load region r, with r's join token: on a server with a secret the
// load takes what joining takes (docs/security.md §12).
func (c *Client) load(ctx context.Context, r Region) error {
	var token string
	if c.cfg.Token != nil {
		t, err := c.cfg.Token(r.Room())
		if err != nil {
			return err
		}
		token = t
	}
	u := "/api/worlds/" + url.PathEscape(c.def.Name) + "/load?x=" + strconv.Itoa(r.X) + "&y=" + strconv.Itoa(r.Y)
	return apiJSON(ctx, c.cfg.HTTP, http.MethodPost, c.cfg.Server, u, token, &RegionEntry{})
}

// follow joins region r's room (loading the region first).
func (c *Client) follow(ctx context.Context, r Region) error {
	if err := c.load(ctx, r); err != nil {
		return err
	}
	var cfg peer.Config
	if c.cfg.Peer != nil {
		cfg = c.cfg.Peer(r.Room())
	}
	room := r.Room()
	cfg.Server, cfg.Room, cfg.User, cfg.Device = c.cfg.Server, string(room), c.cfg.User, c.cfg.Device
	cfg.App = &followApp{c: c, room: room, schemas: c.cfg.App.Schemas()}
	if c.cfg.Token != nil {
		t, err := c.cfg.Token(room)
		if err != nil {
			return err
		}
		cfg.Token = t
	}
	p, err := peer.New(cfg)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(context.Background())
	f := &follow{r: r, p: p, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return peer.ErrClosed
	}
	c.follows[room] = f
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(f.done)
		if err := p.Run(pctx); err != nil && pctx.Err() == nil {
			c.cfg.Logger.Warn().Err(err).Str("room", string(room)).Msg("world: region member ended")
		}
	}()
	return nil
}

// rejoin leaves region r's room and joins it again (once the old member has ended), so that its
// host hears the player arrive and places it anew: an arrival reads the residence record and
// makes the player resident, or tells it where it is (residentRule's silence).
func (c *Client) rejoin(ctx context.Context, r Region) {
	c.mu.Lock()
	f := c.follows[r.Room()]
	busy := c.joining[r.Room()] || c.closed
	if !busy {
		c.joining[r.Room()] = true
	}
	c.mu.Unlock()
	if busy {
		return
	}
	if f != nil {
		c.unfollow(f)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.joining, r.Room())
			c.mu.Unlock()
		}()
		if f != nil {
			select {
			case <-f.done:
			case <-ctx.Done():
				return
			}
		}
		if err := c.follow(ctx, r); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn().Err(err).Str("room", string(r.Room())).Msg("world: region not joined again")
		}
	}()
}

func (c *Client) unfollow(f *follow) {
	c.mu.Lock()
	delete(c.follows, f.r.Room())
	c.mu.Unlock()
	f.cancel()
}

// run owns the player's inputs and residency: it applies the hosts' world messages, sends
// inputs to the resident region (again after a handover or a silence), and follows the regions
// within view.
func (c *Client) run(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		c.closed = true
		fs := make([]*follow, 0, len(c.follows))
		for _, f := range c.follows {
			fs = append(fs, f)
		}
		c.mu.Unlock()
		for _, f := range fs {
			c.unfollow(f)
		}
	}()
	var (
		pending  []input
		seq      uint32 // the last input's
		ack      uint32
		sentUpTo uint32
		sentAt   time.Time
		res      Region
		gen      uint32
		hinted   bool
		wanted   time.Time // the last check that every region in view is followed
		// heard: the last word of the resident region's host that it holds the player (its
		// `resident` at gen or newer, its ack); held: each room's latest word dropped since, taken
		// again once the silence passes ResidentSilence (a redirect is told 5 times only);
		// rejoined: the last time the client joined a room again to be placed anew.
		heard, rejoined time.Time
		held            = map[signaling.RoomID][]byte{}
	)
	acked := func(a uint32) {
		if a <= ack {
			return
		}
		ack = a
		i := 0
		for i < len(pending) && pending[i].seq <= ack {
			i++
		}
		pending = pending[i:]
		sentUpTo = max(sentUpTo, ack)
		sentAt = time.Now()
		c.mu.Lock()
		c.pending, c.ack = len(pending), ack
		c.mu.Unlock()
	}
	// renumber: the world forgot the player's sequence (it restarted and restored the player
	// from its saved data, with ack a): the unacknowledged inputs are numbered anew from a, in
	// order, and sent again.
	renumber := func(a uint32) {
		ack = a
		for i := range pending {
			pending[i].seq = ack + 1 + uint32(i)
		}
		seq = ack + uint32(len(pending))
		sentUpTo, sentAt = ack, time.Time{}
		c.mu.Lock()
		c.ack = ack
		c.mu.Unlock()
	}
	// pump sends the resident region the inputs above sentUpTo, and starts over from the
	// acknowledged one when an acknowledgement is overdue.
	pump := func(now time.Time) {
		if gen == 0 || len(pending) == 0 {
			return
		}
		if sentUpTo > ack && now.Sub(sentAt) > resendAfter {
			sentUpTo = ack // lost on the way (or sent before the host admitted us): again
		}
		c.mu.Lock()
		f := c.follows[res.Room()]
		c.mu.Unlock()
		if f == nil {
			return
		}
		var batch []input
		for _, in := range pending {
			if in.seq > sentUpTo {
				batch = append(batch, in)
			}
		}
		if len(batch) == 0 {
			return
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		sent := sentUpTo
		_ = f.p.Do(dctx, func(w *peer.World) {
			for _, in := range batch {
				if w.SendAction(ActionInput, appendInput(nil, in.seq, in.data)) != nil {
					return
				}
				sent = in.seq
			}
		})
		if sent > sentUpTo {
			sentUpTo, sentAt = sent, now
		}
	}
	handle := func(m regionMsg) {
		switch m.typ {
		case MsgResident:
			rm, err := consumeResident(m.data)
			if err != nil {
				return
			}
			r, ok := c.def.Region(int(rm.X), int(rm.Y))
			if !ok {
				return
			}
			now := c.cfg.Now()
			silent := gen > 0 && now.Sub(heard) >= c.cfg.ResidentSilence
			word, renum := residentRule(res, gen, ack, hinted, silent, m.room, r, rm)
			if word != wordAck {
				c.cfg.Logger.Debug().Str("owner", c.self).Str("from", string(m.room)).Str("room", string(r.Room())).Uint32("gen", rm.Gen).
					Str("resident", string(res.Room())).Uint32("mygen", gen).Uint8("word", uint8(word)).Bool("silent", silent).Msg("world: client resident word")
			}
			if renum {
				renumber(rm.Ack)
			}
			switch word {
			case wordDrop:
				if gen > 0 {
					held[m.room] = m.data
				}
				return
			case wordHint:
				hinted = true
				c.want(ctx, r)
				return
			case wordRedirect:
				c.mu.Lock()
				c.redirect, c.redirectUntil = r, time.Now().Add(redirectFor)
				c.mu.Unlock()
				c.wantOne(ctx, r)
				return
			case wordAck:
				if m.room == res.Room() {
					heard = now
				}
				acked(rm.Ack)
				return
			}
			from := res
			res, gen = r, rm.Gen
			heard = now
			clear(held) // older than what was just taken, or said of a residence that ended
			// The new region applied inputs up to rm.Ack: send it the rest (again), now.
			acked(rm.Ack)
			sentUpTo, sentAt = ack, time.Time{}
			c.mu.Lock()
			c.resident, c.gen = res, gen
			c.redirect = Region{}
			c.mu.Unlock()
			if from != r {
				ev := Event{Kind: EventCrossing, From: from, To: r, Gen: gen}
				if from.World == "" {
					ev.Kind = EventResident
				}
				c.emit(ev)
			}
			c.want(ctx, r)
			pump(time.Now())
		case MsgAck:
			if m.room == res.Room() && len(m.data) == 4 {
				heard = c.cfg.Now() // only a host that holds the player acknowledges its inputs
				acked(binary.LittleEndian.Uint32(m.data))
			}
		case msgHostLost:
			c.reload(ctx, m.room)
		}
	}
	t := time.NewTicker(pumpEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.quit:
			return
		case d := <-c.inputs:
			seq++
			pending = append(pending, input{seq: seq, data: d})
		case <-c.wake:
			c.mu.Lock()
			news := c.inbox
			c.inbox = map[signaling.RoomID]*roomNews{}
			c.mu.Unlock()
			for room, n := range news {
				if n.hostLost {
					handle(regionMsg{room: room, typ: msgHostLost})
				}
				if n.resident != nil {
					handle(regionMsg{room: room, typ: MsgResident, data: n.resident})
				}
				if n.ack != nil {
					handle(regionMsg{room: room, typ: MsgAck, data: n.ack})
				}
			}
		case now := <-t.C:
			c.expire(now)
			if gen > 0 && now.Sub(wanted) >= time.Second {
				// A follow that failed (a load refused under load) is tried again.
				wanted = now
				c.want(ctx, res)
				c.mu.Lock()
				rd := c.redirect
				if now.After(c.redirectUntil) {
					rd, c.redirect = Region{}, Region{}
				}
				c.mu.Unlock()
				if rd.World != "" {
					c.wantOne(ctx, rd)
				}
				// The resident region's host has said nothing of the player for ResidentSilence:
				// the words dropped meanwhile are heard again under the silence rule (residentRule)
				// and, at twice the bound, the region the player is said to be in is joined again,
				// so that its host places the player anew (an arrival reads the record).
				if silence := c.cfg.Now().Sub(heard); silence >= c.cfg.ResidentSilence {
					again := make(map[signaling.RoomID][]byte, len(held))
					maps.Copy(again, held)
					clear(held)
					for room, d := range again {
						c.mu.Lock()
						_, followed := c.follows[room] // a room left since: its word is no one's now
						c.mu.Unlock()
						if followed {
							handle(regionMsg{room: room, typ: MsgResident, data: d})
						}
					}
					// (Again: a word heard again may have been taken.)
					if silence = c.cfg.Now().Sub(heard); silence >= 2*c.cfg.ResidentSilence && c.cfg.Now().Sub(rejoined) >= 2*c.cfg.ResidentSilence {
						rejoined = c.cfg.Now()
						target := res
						if rd.World != "" {
							target = rd
						}
						c.cfg.Logger.Debug().Str("owner", c.self).Str("room", string(target.Room())).Dur("silence", silence).Msg("world: client joins again to be placed")
						c.rejoin(ctx, target)
					}
				}
			}
			pump(now)
		}
	}
}

// residentWord is what a Client does with a MsgResident (residentRule).
type residentWord uint8

const (
	wordDrop     residentWord = iota // older than what the client knows
	wordHint                         // generation 0 before the player is resident: follow the region
	wordRedirect                     // newer, said by a third region's host: follow the region
	wordAck                          // the resident region, the same generation: its ack
	wordTake                         // newer: the player is resident there now
)

// redirectFor is how long a redirected client keeps following the region it was redirected to
// without a word of its host (a region's host tells an arriving member within seconds).
const redirectFor = 15 * time.Second

// residentRule decides what a client resident in res with generation gen (0: not yet), inputs
// acknowledged up to ack, does with m, a MsgResident naming region to that the host of room from
// sent; renumber: the named region's own host acknowledges less than the client had (the world
// forgot the player's sequence: a restart restored it from its saved data), so the client numbers
// its unacknowledged inputs anew from m.Ack.
//
// The generation orders every word about where the player is: it grows by one at each handover
// and each arrival, never below the residence record's, which survives a whole cluster's restart
// (docs/protocol.md §11 "Cluster restart": a host makes a player resident only after writing its
// record, refused below the record's generation). So a word of an older generation, or of the
// same one naming another region, was true before the newest this client took and never after:
// dropping it is safe, and never strands the player, since where it is now was said with a newer
// generation. A newer word is taken from the named region's own host (it holds the avatar) or
// from the resident region's (a handover's source, which names the destination once it holds
// the avatar, or a restarted host that no longer holds it); a third region's host read the
// record, which a claim writes before the destination takes the avatar (and puts back if it does
// not): the client follows that region (a redirect), whose own host then says it, and takes
// nothing from it. Only hosts speak (the Client reads its room's host only). Generation 0 is a
// word of a host that knows no generation (a world without records): followed once, only
// before the player is resident anywhere.
//
// silent: the resident region's host has said nothing of the player (no word naming it at gen or
// newer, no ack) for Config.ResidentSilence. The generation held may then be newer than any
// host's (a whole cluster's restart lost or rewrote the record, docs/protocol.md §11 "Residence
// silence"), and dropping every word would strand the player for ever: a word the rule above
// drops is then taken from the named region's own host (it holds the avatar it names, whatever
// its generation) and followed from anyone else (a redirect: that region's own host then says
// it). While the resident host speaks, nothing changes: an older host cannot take the player back.
func residentRule(res Region, gen, ack uint32, hinted, silent bool, from signaling.RoomID, to Region, m resident) (word residentWord, renumber bool) {
	word, renumber = residentRuleHeard(res, gen, ack, hinted, from, to, m)
	if word != wordDrop || !silent || gen == 0 {
		return word, renumber
	}
	if from == to.Room() && m.Gen > 0 {
		return wordTake, m.Ack < ack
	}
	return wordRedirect, false
}

// residentRuleHeard is residentRule while the resident region's host speaks.
func residentRuleHeard(res Region, gen, ack uint32, hinted bool, from signaling.RoomID, to Region, m resident) (word residentWord, renumber bool) {
	if m.Gen == 0 {
		if gen == 0 && !hinted {
			return wordHint, false
		}
		return wordDrop, false
	}
	if m.Gen < gen || m.Gen == gen && to != res {
		return wordDrop, false
	}
	// Only the named region's own host knows what it applied: another host's ack (a redirect's
	// 0, a handover's source's, which is the destination's first) never renumbers.
	renumber = from == to.Room() && m.Ack < ack
	if m.Gen == gen {
		return wordAck, renumber
	}
	if from != to.Room() && from != res.Room() {
		return wordRedirect, false
	}
	return wordTake, renumber
}

// want follows every region within view of r and marks the others to be left.
func (c *Client) want(ctx context.Context, r Region) {
	for y := r.Y - c.def.View; y <= r.Y+c.def.View; y++ {
		for x := r.X - c.def.View; x <= r.X+c.def.View; x++ {
			if g, ok := c.def.Region(x, y); ok {
				c.wantOne(ctx, g)
			}
		}
	}
}

// wantOne follows g, or keeps following it.
func (c *Client) wantOne(ctx context.Context, g Region) {
	c.mu.Lock()
	f := c.follows[g.Room()]
	if f != nil {
		f.leaveAt = time.Time{}
	}
	c.mu.Unlock()
	if f == nil {
		c.followAsync(ctx, g)
	}
}

// msgHostLost is the Client's own: a followed region's room lost its host.
const msgHostLost uint8 = 0

// reloadTries bounds how long a client asks for a region whose host went away: once a second.
const reloadTries = 60

// reload asks the server to load room's region again, once a second until it answers (a
// restarting server, a cluster moving the region), on a goroutine of its own, once at a time.
func (c *Client) reload(ctx context.Context, room signaling.RoomID) {
	_, x, y, ok := ParseRoom(room)
	r, ok2 := c.def.Region(x, y)
	if !ok || !ok2 {
		return
	}
	key := "reload:" + room
	c.mu.Lock()
	if c.joining[key] || c.closed {
		c.mu.Unlock()
		return
	}
	c.joining[key] = true
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.joining, key)
			c.mu.Unlock()
		}()
		for range reloadTries {
			if c.load(ctx, r) == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-c.quit:
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// followAsync follows g on a goroutine of its own (a load can take a while), once at a time.
func (c *Client) followAsync(ctx context.Context, g Region) {
	c.mu.Lock()
	if c.joining[g.Room()] {
		c.mu.Unlock()
		return
	}
	c.joining[g.Room()] = true
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.follow(ctx, g); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn().Err(err).Str("room", string(g.Room())).Msg("world: region not followed")
		}
		c.mu.Lock()
		delete(c.joining, g.Room())
		c.mu.Unlock()
	}()
}

// expire marks the regions out of view of the resident one to be left, and leaves those whose
// leave time passed.
func (c *Client) expire(now time.Time) {
	c.mu.Lock()
	var gone []*follow
	for _, f := range c.follows {
		if c.gen > 0 && f.leaveAt.IsZero() && !c.def.InView(c.resident.X, c.resident.Y, f.r.X, f.r.Y) && f.r != c.redirect {
			f.leaveAt = now.Add(LeaveDelay)
		}
		if !f.leaveAt.IsZero() && now.After(f.leaveAt) {
			gone = append(gone, f)
		}
	}
	c.mu.Unlock()
	for _, f := range gone {
		c.unfollow(f)
	}
}

func (c *Client) emit(ev Event) {
	select {
	case c.events <- ev:
	default:
		c.mu.Lock()
		c.dropped++
		c.mu.Unlock()
	}
}

// followApp is a region room member's App: it reads, and passes the host's world messages on.
type followApp struct {
	c       *Client
	room    signaling.RoomID
	schemas *schema.Table
}

func (a *followApp) Schemas() *schema.Table { return a.schemas }
func (a *followApp) HostStart(*peer.World)  {}
func (a *followApp) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) {
	return 0, nil
}
func (a *followApp) Tick(*peer.World, time.Duration)                    {}
func (a *followApp) RPC(*peer.World, peer.PeerIndex, uint32, []byte)    {}
func (a *followApp) Action(*peer.World, peer.PeerIndex, uint32, []byte) {}

// OnEvent asks the Client to load the region again when its host went away (the server
// restarted, or its node failed): the region's room keeps its members, and the load brings a
// region host back, which takes the room over from its checkpoint and the members' replicas.
func (a *followApp) OnEvent(w *peer.World, ev peer.Event) {
	if ev.Kind == peer.EventMigrating || ev.Kind == peer.EventHostChanged && w.IsHost() {
		a.c.post(a.room, func(n *roomNews) { n.hostLost = true })
	}
}

// Message passes the host's world messages to the Client (the host's only: a member cannot
// tell another where it is resident).
func (a *followApp) Message(w *peer.World, from peer.PeerIndex, typ uint8, data []byte) {
	if from != w.Host() || (typ != MsgResident && typ != MsgAck) {
		return
	}
	d := append([]byte(nil), data...)
	a.c.post(a.room, func(n *roomNews) {
		if typ == MsgResident {
			n.resident = d
		} else {
			n.ack = d
		}
	})
}

// roomNews is what a region room's host said since the client last looked: the latest of each
// kind, so that a busy client loses no news (a later resident or ack supersedes an earlier one).
type roomNews struct {
	resident, ack []byte
	hostLost      bool
}

// post records news of room and wakes the client's loop.
func (c *Client) post(room signaling.RoomID, fn func(*roomNews)) {
	c.mu.Lock()
	n := c.inbox[room]
	if n == nil {
		n = &roomNews{}
		c.inbox[room] = n
	}
	fn(n)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// apiJSON makes a directory request to the first of Server's URLs (a cluster's nodes) that
// answers it: a node that died, or does not answer, is passed over for the next, as signaling's
// redials are (docs/protocol.md §11 "Cluster").
func apiJSON(ctx context.Context, hc *http.Client, method, server, path, bearer string, v any) error {
	var err error
	for _, base := range strings.Split(server, ",") {
		if base = strings.TrimRight(strings.TrimSpace(base), "/"); base == "" {
			continue
		}
		if err = getJSON(ctx, hc, method, base+path, bearer, v); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func getJSON(ctx context.Context, hc *http.Client, method, u, bearer string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("world: %s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}
