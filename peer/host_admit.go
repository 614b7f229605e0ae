package peer

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// What a host admits from a member beyond authority (docs/protocol.md §5, "Limits"): stamps within
// a bounded skew of its clock, corrections within a bounded batch, and nothing from a member that
// keeps offending.

const (
	// maxStampSkew is how far above the host's Lamport clock a member's stamp may be. An honest
	// member is a few ticks ahead at most (its writes since it last heard the host), a survivor's
	// corrections after a migration a few hundred; a member claiming more is broken or hostile.
	// The wire clock is u32: without this bound one datagram stamped 2³²−1 freezes the room.
	maxStampSkew = 1 << 12
	// stampRate is how fast a member's skew budget refills, in ticks per second: the stamps a
	// member sends may move the host's clock by at most maxStampSkew at once and stampRate per
	// second in the long run (2³² is then decades away).
	stampRate = 1 << 10
	// maxCorrectionMessages and maxCorrectionBytes bound one CRDT batch of corrections.
	maxCorrectionMessages = 1 << 14
	maxCorrectionBytes    = 4 << 20
	// maxVersionAhead bounds how far above the version this host knows of an entity number a
	// relayed deletion may be: a survivor relays what the previous host deleted, the previous
	// host reused a number a few times at most; 0xffff on every number is an attack.
	maxVersionAhead = 4
	// maxStrikes is how many refused inputs a member may send in a burst before its link is
	// closed; strikes drain at one a second.
	maxStrikes = 32
	// maxConducts bounds the conduct records a host keeps (one per identity and one per peer
	// index): past it, the least recently used goes.
	maxConducts = 4096
	// conductMemory is how long a record outlives its last use: by then its strikes have
	// drained and its budget refilled (maxStampSkew/stampRate = 4 s), so forgetting it
	// forgives nothing.
	conductMemory = maxStrikes * time.Second
)

// gate is what the host admits of its members' inputs beyond authority: stamps within their skew
// budget (stampOK), application traffic within its rate (appAllowed), world bytes within the
// members' accounts (admitGrowth, charge: world_limits.go); and what it does with the rest:
// counted and logged (noteRefused), a strike, and the link closed at the last (refuse, strike).
type gate struct {
	roleBase
	// refusedLog counts refused inputs per reason, for rate-limited logs.
	refusedLog [NumRefusals]uint64
	// conducts holds the members' skew budgets and strikes across their links, by identity and
	// by peer index (bounded: maxConducts, conductMemory).
	conducts map[string]*conduct
	// worldUse is the bytes each member's writes added to the world, by identity (or index):
	// WorldLimits.MemberBytes (world_limits.go).
	worldUse map[string]int
}

// conduct is what a host holds against a member beyond one link: its skew budget and strikes.
// A member that reconnects (a new link, the same identity or the same peer index after a resume)
// finds its record again, so that reconnecting between offences wipes nothing.
type conduct struct {
	// budget is how far the member's stamps may still move the host's clock (stampOK), as of
	// budgetAt; strikes counts its refused inputs, draining from strikeAt (strike).
	budget, strikes    float64
	budgetAt, strikeAt time.Time
	// used is when the record was last charged or given to a link.
	used time.Time
}

// conductOf returns the record of the member linked as idx: the one of its identity or of its
// index (the one with more strikes when both exist), else a new one; kept under both keys.
func (g *gate) conductOf(idx PeerIndex) *conduct {
	now := g.env.now()
	keys := []string{"#" + strconv.FormatUint(uint64(idx), 10)}
	if id := g.env.roster()[idx].ID; id != "" {
		keys = append(keys, "id "+string(id))
	}
	var c *conduct
	for _, k := range keys {
		if o := g.conducts[k]; o != nil && now.Sub(o.used) < conductMemory && (c == nil || o.strikes > c.strikes) {
			c = o
		}
	}
	if c == nil {
		c = &conduct{}
	}
	c.used = now
	if g.conducts == nil {
		g.conducts = make(map[string]*conduct)
	}
	for _, k := range keys {
		if _, ok := g.conducts[k]; !ok && len(g.conducts) >= maxConducts {
			g.evictConduct(now)
		}
		g.conducts[k] = c
	}
	return c
}

// evictConduct makes room for a record: it drops the records past conductMemory, else the least
// recently used one.
func (g *gate) evictConduct(now time.Time) {
	var oldest string
	var at time.Time
	for k, c := range g.conducts {
		if now.Sub(c.used) >= conductMemory {
			delete(g.conducts, k)
			continue
		}
		if oldest == "" || c.used.Before(at) {
			oldest, at = k, c.used
		}
	}
	if len(g.conducts) >= maxConducts {
		delete(g.conducts, oldest)
	}
}

// CloseRefused is the Close code a host sends a member it drops for refused inputs; the reason
// names the last one.
const CloseRefused uint16 = 2

var errOffender = errors.New("peer: member dropped for refused inputs")

// stampOK checks a member's stamp against the host's clock and the member's skew budget, and
// charges the budget for how far the stamp moves the clock.
func (g *gate) stampOK(hm *hostMember, ts crdt.Timestamp) bool {
	clock := g.w.r.Clock()
	if ts <= clock {
		return true
	}
	d := float64(ts - clock)
	now := g.env.now()
	c := hm.conduct
	if c.budgetAt.IsZero() {
		c.budget = maxStampSkew
	} else {
		c.budget = min(maxStampSkew, c.budget+now.Sub(c.budgetAt).Seconds()*stampRate)
	}
	c.budgetAt, c.used = now, now
	if d > c.budget {
		return false
	}
	c.budget -= d
	return true
}

// refuse counts an input refused for reason, logs it (warn, rate-limited), and returns
// errOffender when the member has offended maxStrikes times in a burst: the caller closes its
// link after a Close that says why.
func (g *gate) refuse(hm *hostMember, why Refusal, reason string) error {
	g.noteRefused(hm.link.idx, why, reason)
	return g.strike(hm, reason)
}

// noteRefused counts an input of member idx refused for reason and logs it (warn, rate-limited),
// without a strike.
func (g *gate) noteRefused(idx PeerIndex, why Refusal, reason string) {
	g.count.refuse(why)
	n := &g.refusedLog[why]
	if *n++; *n <= 10 || *n%1000 == 0 {
		g.log.Warn().Uint64("peer", uint64(idx)).Str("reason", why.String()).Uint64("count", *n).Msg("input refused: " + reason)
	}
}

// strike counts one offence of hm; at maxStrikes in a burst it closes hm's link with a Close that
// says why and returns errOffender.
func (g *gate) strike(hm *hostMember, reason string) error {
	if hm.refused {
		return nil
	}
	now := g.env.now()
	c := hm.conduct
	if !c.strikeAt.IsZero() {
		c.strikes = max(0, c.strikes-now.Sub(c.strikeAt).Seconds())
	}
	c.strikeAt, c.used = now, now
	if c.strikes = min(c.strikes+1, maxStrikes); c.strikes < maxStrikes {
		return nil
	}
	g.count.offenders.Add(1)
	g.log.Warn().Uint64("peer", uint64(hm.link.idx)).Msg("member keeps sending refused inputs; closing its link: " + reason)
	g.env.send(hm.link, link.Reliable, netmsg.AppendClose(nil, &netmsg.Close{Code: CloseRefused, Reason: reason}))
	hm.refused = true
	return fmt.Errorf("%w: %s", errOffender, reason)
}

// entityVerdict is what authority decided of one entity's corrections in a batch: err refuses
// them; windowed says they are admitted only because the batch is a survivor's (relayed);
// lacked says this host held nothing of the entity when the batch first named it (not live, no
// tombstone of its version).
type entityVerdict struct {
	err      error
	windowed bool
	lacked   bool
}
