package peer

import (
	"encoding/binary"
	"fmt"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// The host's side of the application API: its own messages, Actions and grants, and what it
// admits of its members' (docs/protocol.md §5, "Limits").

const (
	// appRate and appBurst bound a member's application traffic through the host: messages,
	// Actions, append requests and RPCs, each one unit. Beyond it the input is dropped and counted,
	// not held against the member: a game that sends too much loses messages, not players.
	appRate  = 200
	appBurst = 400
)

// queuedMessage is an application message on its way out through outbox.deliver: the host's own,
// or a member's relayed copy. A reliable one waits for the commands of the same step, so that a
// message never overtakes the state change that came before it.
type queuedMessage struct {
	to     PeerIndex // a member, or Everyone
	except PeerIndex // with Everyone: the member not to send it to (its sender)
	frame  []byte
	// relayed: a member's message relayed to member to (whose sender is except), dropped
	// rather than sent past to's relay backlog (outbox.sendRelayed).
	relayed bool
}

// appAllowed charges hm one unit of application traffic; false means over budget (dropped).
func (g *gate) appAllowed(hm *hostMember) bool {
	if !hm.app.take(g.env.now(), appRate, appBurst, 1) {
		g.count.dropped.Add(1)
		return false
	}
	return true
}

func channelOf(reliable bool) link.Channel {
	if reliable {
		return link.Reliable
	}
	return link.Unreliable
}

func (h *hostRole) sendMessage(to PeerIndex, typ uint8, data []byte, reliable bool) error {
	if to != Everyone && h.synced(to) == nil {
		return fmt.Errorf("%w: %d", ErrNoPeer, to)
	}
	h.outbox.deliver(queuedMessage{to: to, frame: netmsg.AppendExt(nil, netmsg.Type(typ), data)}, channelOf(reliable))
	return nil
}

func (h *hostRole) sendAction(typ uint32, data []byte) error {
	h.actions = append(h.actions, netmsg.Action{Type: typ, Data: append([]byte(nil), data...)})
	return nil
}

// requestAppend is a member's: World.Append appends on the host itself.
func (h *hostRole) requestAppend(Entity, crdt.ComponentID, []byte) error { return ErrNotHost }

func (h *hostRole) grant(e Entity, to PeerIndex) error {
	if to == h.w.self {
		return h.revoke(e)
	}
	if _, present := h.env.roster()[to]; !present {
		return fmt.Errorf("%w: %d", ErrNoPeer, to)
	}
	t, err := h.auth.Grant(to, e, h.env.now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoAuthority, err)
	}
	if t.From != t.To {
		h.authorityLost(e, t.From)
		h.w.writeAuthority(e, authority.Record{Kind: authority.KindLock, Peer: to})
	}
	return nil
}

func (h *hostRole) revoke(e Entity) error {
	rec := h.w.AuthorityRecord(e)
	if rec.Kind == authority.KindHost {
		return nil
	}
	if rec.Kind != authority.KindLock {
		return fmt.Errorf("%w: %v is peer %d's avatar", ErrNoAuthority, e, rec.Peer)
	}
	if _, err := h.auth.Relinquish(rec.Peer, e); err != nil {
		return fmt.Errorf("%w: %w", ErrNoAuthority, err)
	}
	h.authorityLost(e, rec.Peer)
	h.w.writeAuthority(e, authority.Record{})
	return nil
}

// appMessage handles an application message from member hm, addressed to the host.
func (h *hostRole) appMessage(hm *hostMember, typ uint8, data []byte) error {
	if !hm.snapshotSent || !h.appAllowed(hm) {
		return nil
	}
	if len(data) > MaxMessage {
		return h.refuse(hm, RefusedApplication, fmt.Sprintf("application message of %d bytes, more than %d", len(data), MaxMessage))
	}
	h.toApp(hm.link.idx, typ, data)
	return nil
}

// toApp hands an application message from peer from to the host's app.
func (h *hostRole) toApp(from PeerIndex, typ uint8, data []byte) {
	if mh, ok := h.app.(MessageHandler); ok {
		mh.Message(h.w, from, typ, data)
	}
}

// relayMessage forwards a member's message to its destination, as the app's RelayPolicy allows.
// A message to the host is delivered here; one to Everyone here and to every other member.
func (h *hostRole) relayMessage(hm *hostMember, rl *netmsg.Relay, ch link.Channel) error {
	if !hm.snapshotSent || !h.appAllowed(hm) {
		return nil
	}
	from, to := hm.link.idx, PeerIndex(rl.Peer)
	if len(rl.Data) > MaxMessage {
		return h.refuse(hm, RefusedApplication, fmt.Sprintf("relayed message of %d bytes, more than %d", len(rl.Data), MaxMessage))
	}
	if to == h.w.self {
		h.toApp(from, uint8(rl.AppType), rl.Data)
		return nil
	}
	if to == from || (to != Everyone && h.synced(to) == nil) {
		h.count.dropped.Add(1) // the destination left, or never was: not the sender's fault
		return nil
	}
	if p, ok := h.app.(RelayPolicy); ok && !p.AllowRelay(h.w, from, to, uint8(rl.AppType)) {
		h.count.dropped.Add(1)
		return nil
	}
	if to == Everyone {
		h.toApp(from, uint8(rl.AppType), rl.Data)
	}
	h.forwardRelay(hm, to, netmsg.AppendRelay(nil, &netmsg.Relay{Peer: uint64(from), AppType: rl.AppType, Data: rl.Data}), ch)
	return nil
}

// memberActions hands a member's Actions to the app.
func (h *hostRole) memberActions(hm *hostMember, acts []netmsg.Action) error {
	if !hm.snapshotSent {
		return nil
	}
	for _, a := range acts {
		if !h.appAllowed(hm) {
			return nil
		}
		if len(a.Data) > MaxAction {
			if err := h.refuse(hm, RefusedApplication, fmt.Sprintf("action of %d bytes, more than %d", len(a.Data), MaxAction)); err != nil {
				return err
			}
			continue
		}
		deliverAction(h.roleBase, hm.link.idx, a)
	}
	return nil
}

// deliverAction gives an Action to the app's ActionHandler, or to RPC when it has none.
func deliverAction(b roleBase, from PeerIndex, a netmsg.Action) {
	if ah, ok := b.app.(ActionHandler); ok {
		ah.Action(b.w, from, a.Type, a.Data)
		return
	}
	b.app.RPC(b.w, from, a.Type, a.Data)
}

// appendRequested admits a member's append request: to an entity it writes, or as the app's
// AppendPolicy allows, within the world's bounds (admitGrowth). It returns errOffender when the
// refusal was the member's last strike.
func (h *hostRole) appendRequested(hm *hostMember, data []byte) error {
	if len(data) < 8 {
		h.count.dropped.Add(1)
		return nil
	}
	idx := hm.link.idx
	e, c, value := Entity(binary.LittleEndian.Uint32(data)), crdt.ComponentID(binary.LittleEndian.Uint32(data[4:])), data[8:]
	if err := h.w.checkAppend(e, c, value); err != nil {
		h.count.dropped.Add(1)
		h.log.Debug().Err(err).Uint64("peer", uint64(idx)).Msg("append refused")
		return nil
	}
	allowed := h.auth.AdmitWrite(idx, e) == nil
	if p, ok := h.app.(AppendPolicy); ok && !allowed {
		allowed = p.AllowAppend(h.w, idx, e, c, value)
	}
	if !allowed {
		h.count.rejected.Add(1)
		h.log.Debug().Uint64("peer", uint64(idx)).Stringer("entity", e).Msg("append refused: no authority and no AppendPolicy allows it")
		return nil
	}
	m := crdt.Message{Type: crdt.AppendValue, Entity: e, Component: c, Data: value}
	if why, reason := h.admitGrowth(hm, &m); reason != "" {
		return h.refuse(hm, why, "append: "+reason)
	}
	before := h.w.r.Size()
	_ = h.w.Append(e, c, value)
	h.charge(hm, before)
	return nil
}
