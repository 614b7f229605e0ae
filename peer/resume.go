package peer

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/signaling/sigclient"
)

// Recovery from a signaling outage (docs/protocol.md §5 "Resume"). Links between members do not
// need the signaling server once they are up, so when the server goes away the room plays on.
// The peer redials in the background with exponential backoff and jitter, claiming its old peer
// index, term and host; the server gives the index back (authority is keyed by it), restores a
// host that survived in its own term (no migration), and elects a new host only when the old
// one does not come back within its resume grace.

// dialTimeout bounds one attempt to reach the signaling server.
const dialTimeout = 5 * time.Second

// signalingLost handles an unexpected end of the signaling connection: the links and the world
// go on, and a redial starts unless the server ended this connection for a reason that a new
// one would meet again.
func (p *Peer) signalingLost(ctx context.Context, cause error) {
	old := p.sig
	p.setSig(nil)
	p.publish()
	if errors.Is(cause, sigclient.ErrKicked) {
		// A moderator removed this member (kicked, or banned: ErrBanned is a kick too). Rejoining
		// by itself would undo the kick: the session ends, links and all, and Run returns why.
		p.log.Error().Err(cause).Msg("removed from the room by a moderator; not redialing")
		p.closeLater(old)
		p.fatal = cause
		return
	}
	if errors.Is(cause, sigclient.ErrReplaced) {
		// Another connection joined with this identity (the same device elsewhere): fighting
		// it for the index would only take turns at replacing each other.
		p.closeLater(old)
		if p.cfg.EndWhenReplaced {
			p.log.Error().Err(cause).Msg("signaling connection replaced by another with this identity; ending (EndWhenReplaced)")
			p.fatal = cause
			return
		}
		p.log.Error().Err(cause).Msg("signaling connection replaced by another with this identity; not redialing, keeping links")
		return
	}
	p.log.Warn().Err(cause).Msg("signaling connection lost; keeping links and redialing")
	claim := p.resumeClaim()
	last := p.server
	p.goTracked(func() { p.redial(ctx, old, claim, last) })
}

// dialFirst joins through the first node of Config.Server's list that takes the join, trying
// each once in order; a refusal every node would give alike (permanent) ends the search.
func (p *Peer) dialFirst(ctx context.Context) (*sigclient.Client, error) {
	var errs []error
	for i, s := range p.servers {
		c, err := sigclient.Dial(ctx, s, p.joinOptions(nil), p.cfg.SignalingConfig)
		if err == nil {
			p.server = i
			return c, nil
		}
		if len(p.servers) == 1 || permanent(err) || ctx.Err() != nil {
			return nil, err
		}
		p.log.Warn().Err(err).Str("server", s).Msg("signaling node unreachable; trying the next")
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resumeClaim is what this peer asks a server to give back: its index, and the term and host it
// knows, vouched for by the newest resume token it holds (a token vouches for one term, and a
// claim may run only a few terms past it: docs/protocol.md §4 "Signaling: limits").
func (p *Peer) resumeClaim() sigclient.Resume {
	return sigclient.Resume{
		Index: p.w.self, Term: p.w.term, Host: p.w.host, Synced: p.held,
		Room: sigclient.RoomID(p.cfg.Room), Token: p.resumeToken,
	}
}

// redial runs on its own goroutine, owned by the peer (goTracked): it dials until the server
// takes the claim, the claim is refused for good, or the peer stops. It only posts its outcome to
// the loop.
func (p *Peer) redial(ctx context.Context, old sigClient, claim sigclient.Resume, last int) {
	if old != nil {
		_ = old.Close() // its goroutines have ended or end now; Close waits for them
	}
	delay := p.cfg.RedialMin
	for attempt := 1; ; attempt++ {
		// Full delay halved plus a random half: peers that lost the server together do not
		// come back in lockstep, and no wait exceeds RedialMax.
		wait := delay/2 + rand.N(delay/2+1)
		t := p.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-p.quit:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		// Each attempt goes to the next node of the list: the one just lost may be dead.
		i := (last + attempt) % len(p.servers)
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := sigclient.Dial(dctx, p.servers[i], p.joinOptions(&claim), p.cfg.SignalingConfig)
		cancel()
		if err == nil {
			select {
			case p.calls <- func() { p.server = i; p.adopt(c, attempt) }:
			case <-p.quit:
				_ = c.Close()
			}
			return
		}
		if permanent(err) {
			select {
			case p.calls <- func() { p.resumeRefused(err) }:
			case <-p.quit:
			}
			return
		}
		p.log.Debug().Err(err).Int("attempt", attempt).Str("server", p.servers[i]).Dur("waited", wait).Msg("signaling redial failed")
		delay = min(2*delay, p.cfg.RedialMax)
	}
}

// closeLater closes a signaling client off the loop (Close waits up to CloseGrace for the
// server), on a goroutine that shutdown waits for.
func (p *Peer) closeLater(c sigClient) {
	if c == nil {
		return
	}
	p.goTracked(func() { _ = c.Close() })
}

// permanent reports whether a failed resume would fail the same way again: the server refused
// the claim, or the join itself (a token that expired or does not fit, another protocol).
func permanent(err error) bool {
	for _, e := range []error{
		sigclient.ErrResumeRefused, sigclient.ErrTokenRequired, sigclient.ErrTokenInvalid, sigclient.ErrTokenExpired,
		sigclient.ErrTokenMismatch, sigclient.ErrWrongRoom, sigclient.ErrUnsupportedVersion, sigclient.ErrBadMessage,
		sigclient.ErrKicked, // and ErrBanned
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// adopt takes a resumed signaling client on the loop and reconciles with what the server says.
func (p *Peer) adopt(c sigClient, attempts int) {
	j := c.Joined()
	if j.Self != p.w.self {
		// Dial checks this; a server that broke the rule would give this peer two indices.
		p.log.Error().Uint64("self", uint64(j.Self)).Msg("signaling resumed under another peer index; leaving it")
		p.closeLater(c)
		p.resumeRefused(sigclient.ErrResumeIgnored)
		return
	}
	p.setSig(c)
	p.resumeToken = j.ResumeToken
	p.setICEServers(j.ICEServers) // fresh credentials
	clear(p.members)
	for _, m := range j.Members {
		p.members[m.Index] = m
	}
	p.pinned = j.PinnedHosts
	p.count.resumes.Add(1)
	p.log.Info().Int("attempts", attempts).Uint64("term", uint64(j.Term)).Uint64("host", uint64(j.Host)).
		Int("members", len(j.Members)).Msg("signaling resumed")
	hosting := p.host
	p.setHost(j.Term, j.Host)
	if p.host != nil && p.host == hosting {
		p.host.sweepLater() // a host that just started has scheduled its own sweep
	}
	if p.host != nil || (p.member != nil && p.member.synced) {
		p.setSynced()
	}
	p.updateStandby()
	p.report()
}

// resumeRefused runs on the loop when the server will not give this peer its index back: the
// room plays on over the links, without signaling (no elections, no new links).
func (p *Peer) resumeRefused(err error) {
	if errors.Is(err, sigclient.ErrKicked) {
		// Banned while away: the session ends, as on a kick.
		p.log.Error().Err(err).Msg("banned from the room; ending the session")
		p.fatal = err
		return
	}
	p.resumeErr = err
	p.log.Error().Err(err).Msg("signaling refused to resume this peer; playing on without signaling, state kept")
	p.publish()
}
