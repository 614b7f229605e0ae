package peer

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// env is what a role sees of its peer: the clock and timers of the loop, the links, and the room
// as signaling tells it. *Peer implements it; the roles never hold *Peer.
type env interface {
	now() time.Time
	// stepNow is now read once per loop step: a step that writes many properties (an app's tick)
	// stamps them all with one clock read.
	stepNow() time.Time
	monotonic() int64
	// after runs fn on the loop once d has passed (a loop timer: no goroutine).
	after(d time.Duration, fn func())
	send(r *remote, ch link.Channel, payload []byte)
	// sendOwned sends unfragmented payloads, in order, that the caller never modifies again
	// (link.OwnedSender): the link may keep them instead of copying them.
	sendOwned(r *remote, ch link.Channel, payloads [][]byte)
	// queue holds reliable messages for r until the next network flush or reliable send to r.
	queue(r *remote, payload []byte)
	// drop closes r and tells the roles it is gone (linkClosed, hostLinkClosed).
	drop(r *remote)
	// discard closes r without telling the roles.
	discard(r *remote)
	// linkTo returns the link to member idx, or nil.
	linkTo(idx PeerIndex) *remote
	// dial makes a new link to idx as offerer (nil if the transport refuses).
	dial(idx PeerIndex) *remote
	// takeStandby returns the open standby link to idx, which stops being the standby, or nil.
	takeStandby(idx PeerIndex) *remote
	// roster is signaling's member list; read-only, and nil-safe to index.
	roster() map[PeerIndex]sigclient.Member
	// signalingUp reports a live signaling connection.
	signalingUp() bool
	// memberSynced tells the peer that the member role holds the host's world.
	memberSynced()
	// fail ends Run with err after the current step.
	fail(err error)
	// successor is the member signaling would elect if this peer (the host) went away, 0 if none.
	successor() PeerIndex
}

// roleBase is what both roles share: the world and the peer's settings, logger, app and counters.
type roleBase struct {
	env   env
	w     *World
	app   App
	cfg   *Config
	log   zerolog.Logger
	count *counters
}

func (p *Peer) roleBase() roleBase {
	return roleBase{env: p, w: p.w, app: p.app, cfg: &p.cfg, log: p.log, count: &p.count}
}

func (p *Peer) now() time.Time { return p.clock.Now() }
func (p *Peer) stepNow() time.Time {
	if p.stepAt.IsZero() {
		p.stepAt = p.clock.Now()
	}
	return p.stepAt
}
func (p *Peer) linkTo(idx PeerIndex) *remote           { return p.remotes[idx] }
func (p *Peer) roster() map[PeerIndex]sigclient.Member { return p.members }
func (p *Peer) signalingUp() bool                      { return p.sig != nil }
func (p *Peer) fail(err error) {
	if p.fatal == nil {
		p.fatal = err
	}
}

func (p *Peer) dial(idx PeerIndex) *remote {
	p.session++
	return p.connect(idx, p.session, true)
}

func (p *Peer) takeStandby(idx PeerIndex) *remote {
	s := p.standby
	if s == nil || s.idx != idx || p.remotes[idx] != s {
		return nil
	}
	p.standby = nil
	return s
}

func (p *Peer) memberSynced() {
	p.migrated()
	p.held = true
	p.setSynced()
	// The standby link waits standbyDelay: made at once, the synced members' handshakes with the
	// next host would compete with the syncs of the members still migrating (31 DTLS handshakes
	// in one process, in the middle of the pause), and it only serves the next migration.
	p.standbyAt = p.clock.Now().Add(standbyDelay)
	p.after(standbyDelay, p.updateStandby)
	// Status.Synced turns true in this loop step, not up to a ReportInterval later; but after
	// the app has heard EventSynced (afterEvent): the status hash after a snapshot sums the
	// whole replica, milliseconds the app need not wait for.
	p.publishDue = true
}
