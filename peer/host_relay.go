package peer

import (
	"fmt"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// The host's bounds on relayed application messages (docs/protocol.md §2.8 and §5, "Session:
// limits"). A relay costs the host one copy per recipient, so a member's message budget
// (appRate) alone lets one sender to Everyone multiply its traffic by the room: 200 messages of
// 16 KiB a second became 3.2 MB/s into every member, whose reliable queue then passed the
// link's high-water mark, and the host closed every honest member as one that "cannot keep up".
// Three bounds keep relayed traffic within what the members' links carry beside the host's own
// state stream, and each drops what does not fit (counted against the sender), never a member:
//
//   - the sender's relay bytes (Config.RelayRate, RelayBurst), each copy counted, so a message
//     to Everyone in a room of N costs N−1 copies;
//   - each recipient's relay bytes from all senders together (Config.RecvRelayRate,
//     RecvRelayBurst), so that many senders cannot flood one member either;
//   - the recipient's backlog: a relayed copy is dropped while the member's reliable queue holds
//     more than Config.RelayBacklog (an unreliable one while its unreliable queue holds more than
//     half the link's drop threshold), so that a slow member loses relayed messages before the
//     host's own stream reaches the high-water mark that closes the link.
//
// None of them is a strike: a game that sends too much loses messages, not players.

// Defaults of the relay budgets in Config. A member's link carries far more than a game's
// messages: the host's updates alone may use up to MaxDatagramsPerFlush × 1200 B per network
// interval (1.5 MB/s at 20 Hz). Relayed traffic is held to a small share of that: 128 KiB/s into
// one member (1 Mbit/s: eight messages of the largest size a second, or a thousand chat lines),
// a 256 KiB burst (a quarter of link.DefaultReliableHighWater, so relays alone never get near
// it); a sender may fill two members' share (256 KiB/s, 512 KiB at once: one largest message to
// 31 others), which a broadcast splits among the room.
const (
	DefaultRelayRate      = 256 << 10
	DefaultRelayBurst     = 512 << 10
	DefaultRecvRelayRate  = 128 << 10
	DefaultRecvRelayBurst = 256 << 10
	// DefaultRelayBacklog is Config.RelayBacklog's default: a quarter of the reliable
	// high-water mark, leaving three quarters to the host's commands and snapshots.
	DefaultRelayBacklog = link.DefaultReliableHighWater / 4
	// maxRelayFrame is the largest relayed message on the wire; no burst is below it, so that
	// every allowed message can pass.
	maxRelayFrame = MaxMessage + netmsg.RelayOverhead
	// unreliableRelayBacklog: relayed datagrams stop while this many bytes wait on a member's
	// unreliable channel, half the link's drop threshold, so that the host's updates still fit.
	unreliableRelayBacklog = link.DefaultUnreliableDropThreshold / 2
)

// budget is a token bucket (of bytes for relays, of messages for application traffic), refilled
// by the loop's clock.
type budget struct {
	units float64
	at    time.Time
}

// take spends n units of b, refilled at rate a second up to burst since it was last used;
// false: b holds fewer than n and nothing is spent.
func (b *budget) take(now time.Time, rate, burst, n int) bool {
	if b.at.IsZero() {
		b.units = float64(burst)
	} else if d := now.Sub(b.at); d > 0 {
		b.units = min(float64(burst), b.units+d.Seconds()*float64(rate))
	}
	b.at = now
	if b.units < float64(n) {
		return false
	}
	b.units -= float64(n)
	return true
}

// relayer forwards members' messages to each other within the relay budgets above; the copies
// leave through outbox, as the host's own messages do.
type relayer struct {
	roleBase
	members *members
	gate    *gate
	outbox  *outbox
	// relayTo is forwardRelay's scratch: the recipients of one relayed message.
	relayTo []*hostMember
}

// forwardRelay forwards frame, a Relay from member hm to (a member, or Everyone), to every synced
// member it is for, within the budgets above; the host's own app has had its copy.
func (rl *relayer) forwardRelay(hm *hostMember, to PeerIndex, frame []byte, ch link.Channel) {
	from := hm.link.idx
	rl.relayTo = rl.relayTo[:0]
	for idx, dm := range rl.members.mems {
		if dm.snapshotSent && idx != from && (to == Everyone || to == idx) {
			rl.relayTo = append(rl.relayTo, dm)
		}
	}
	defer clear(rl.relayTo) // no stale members held
	now, cfg := rl.env.now(), rl.cfg
	if cost := len(frame) * len(rl.relayTo); !hm.relayOut.take(now, cfg.RelayRate, cfg.RelayBurst, cost) {
		rl.gate.noteRefused(from, RefusedRelayBudget, fmt.Sprintf("relay of %d bytes to %d members over the sender's budget (%d B/s)", len(frame), len(rl.relayTo), cfg.RelayRate))
		return
	}
	for _, dm := range rl.relayTo {
		if !dm.relayIn.take(now, cfg.RecvRelayRate, cfg.RecvRelayBurst, len(frame)) {
			rl.gate.noteRefused(from, RefusedRelayInbound, fmt.Sprintf("relay of %d bytes to member %d over its inbound budget (%d B/s)", len(frame), dm.link.idx, cfg.RecvRelayRate))
			continue
		}
		rl.outbox.deliver(queuedMessage{to: dm.link.idx, except: from, frame: frame, relayed: true}, ch)
	}
}
