package peer

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// The receive path: every message of a payload is decoded exactly once, into the inbox, and the
// role gets the decoded value.

// inbox holds the decoded form of every message type; each Consume decodes into it, reusing its
// slices. Decoded values alias the payload and are valid until the next message.
type inbox struct {
	snap  netmsg.HostSnapshot
	hc    netmsg.HostCommands
	pc    netmsg.PeerCommands
	eu    netmsg.EntityUpdates
	pe    netmsg.PeerEntered
	px    netmsg.PeerExited
	batch netmsg.CrdtBatch
	hello netmsg.Hello
	dig   netmsg.Digest
	frag  netmsg.Fragment
	ping  netmsg.Ping
	pong  netmsg.Pong
	close netmsg.Close
	stamp netmsg.Stamp
	relay netmsg.Relay
	acts  netmsg.Actions
	forgt netmsg.Forget
	du    netmsg.DeltaUpdates
	ack   netmsg.Ack
	// app is the body of an application message (types 128–255).
	app []byte
	// ch is the channel the payload being walked arrived on.
	ch link.Channel
}

// decode decodes the message at the start of b into in and returns its type and length. An
// unknown extension or application message is returned with its length and ErrUnknownType.
func (in *inbox) decode(b []byte) (netmsg.Type, int, error) {
	t := netmsg.Type(b[0])
	var n int
	var err error
	switch t {
	case netmsg.TypeHostSnapshot:
		n, err = netmsg.ConsumeHostSnapshot(b, &in.snap)
	case netmsg.TypePeerEntered:
		n, err = netmsg.ConsumePeerEntered(b, &in.pe)
	case netmsg.TypePeerExited:
		n, err = netmsg.ConsumePeerExited(b, &in.px)
	case netmsg.TypeHostCommands:
		n, err = netmsg.ConsumeHostCommands(b, &in.hc)
	case netmsg.TypePeerCommands:
		n, err = netmsg.ConsumePeerCommands(b, &in.pc)
	case netmsg.TypeEntityUpdates:
		n, err = netmsg.ConsumeEntityUpdates(b, &in.eu)
	case netmsg.TypePackedUpdates:
		// The same updates, packed: the roles handle them as EntityUpdates.
		n, err = netmsg.ConsumePackedUpdates(b, &in.eu)
		t = netmsg.TypeEntityUpdates
	case netmsg.TypeRunUpdates:
		// The same updates, in runs: the roles handle them as EntityUpdates.
		n, err = netmsg.ConsumeRunUpdates(b, &in.eu)
		t = netmsg.TypeEntityUpdates
	case netmsg.TypeFragment:
		n, err = netmsg.ConsumeFragment(b, &in.frag)
	case netmsg.TypeCrdtBatch:
		n, err = netmsg.ConsumeCrdtBatch(b, &in.batch)
	case netmsg.TypePing:
		n, err = netmsg.ConsumePing(b, &in.ping)
	case netmsg.TypePong:
		n, err = netmsg.ConsumePong(b, &in.pong)
	case netmsg.TypeClose:
		n, err = netmsg.ConsumeClose(b, &in.close)
	case netmsg.TypeHello:
		n, err = netmsg.ConsumeHello(b, &in.hello)
	case netmsg.TypeStamp:
		n, err = netmsg.ConsumeStamp(b, &in.stamp)
	case netmsg.TypeDigest:
		n, err = netmsg.ConsumeDigest(b, &in.dig)
	case netmsg.TypeRelay:
		n, err = netmsg.ConsumeRelay(b, &in.relay)
	case netmsg.TypeActions:
		n, err = netmsg.ConsumeActions(b, &in.acts)
	case netmsg.TypeForget:
		n, err = netmsg.ConsumeForget(b, &in.forgt)
	case netmsg.TypeDeltaUpdates:
		n, err = netmsg.ConsumeDeltaUpdates(b, &in.du)
	case netmsg.TypeAck:
		n, err = netmsg.ConsumeAck(b, &in.ack)
	default:
		if t.IsApplication() {
			_, in.app, n, err = netmsg.ConsumeExt(b)
			break
		}
		_, _, n, err = netmsg.ConsumeExt(b)
		if err == nil {
			err = netmsg.ErrUnknownType
		}
	}
	return t, n, err
}

// handlePayload walks the messages of one payload. A *netmsg.ProtocolError (or any returned error)
// ends the link; a message that is merely unusable is dropped and counted.
func (p *Peer) handlePayload(r *remote, ch link.Channel, payload []byte, depth int) error {
	if ch == link.Unreliable {
		if err := netmsg.CheckDatagram(payload); err != nil {
			return err
		}
	}
	in := p.inbox(depth)
	in.ch = ch
	var stamp uint64
	for off := 0; off < len(payload); {
		t, n, err := in.decode(payload[off:])
		if err != nil {
			if errors.Is(err, netmsg.ErrUnknownType) {
				p.count.dropped.Add(1)
				off += n
				continue
			}
			return err
		}
		raw := payload[off : off+n]
		off += n
		switch t {
		case netmsg.TypeFragment:
			if depth > 0 {
				return fmt.Errorf("%w: fragment inside a fragmented payload", errMalformed)
			}
			p.sizeReassembly(r)
			whole, done, err := r.reasm.Push(&in.frag)
			if err != nil {
				return err
			}
			if done {
				if err := p.handlePayload(r, ch, whole, depth+1); err != nil {
					return err
				}
			}
			continue
		case netmsg.TypeStamp:
			stamp = in.stamp.Time
			continue
		case netmsg.TypePing:
			p.send(r, link.Reliable, netmsg.AppendPong(p.scratch[:0], &netmsg.Pong{Nonce: in.ping.Nonce, EchoTime: in.ping.SendTime}))
			continue
		case netmsg.TypePong:
			r.rtt = time.Duration(p.monotonic() - int64(in.pong.EchoTime))
			r.pongs++
			continue
		case netmsg.TypeClose:
			p.log.Warn().Uint64("peer", uint64(r.idx)).Uint16("code", in.close.Code).Str("reason", in.close.Reason).Msg("peer closed the session")
			if p.member != nil && r == p.member.hostLink {
				p.member.hostClosed(&in.close)
			}
			continue
		}
		var err2 error
		switch {
		case p.host != nil:
			err2 = p.host.handle(r, t, in)
		case p.member != nil && r == p.member.hostLink:
			err2 = p.member.handle(t, in, stamp)
		default:
			p.count.fenced.Add(1) // a message from a peer that is not the host of this term
			if p.host == nil && (t == netmsg.TypeHello || t == netmsg.TypeDigest || t == netmsg.TypeAck && in.ch == link.Reliable) {
				// A member that learned of the new term first greets us over its standby link
				// before we learn we are its host: keep the greeting aside (TRNP keeps messages
				// aside in case the host changes) and answer it when we become host.
				if len(r.aside) >= 4 {
					r.aside = r.aside[1:]
				}
				r.aside = append(r.aside, bytes.Clone(raw))
			}
		}
		if err2 != nil {
			return err2
		}
	}
	return nil
}

// inbox returns the decode scratch for a payload at depth (a reassembled payload is walked while
// the fragment that completed it is still being handled).
func (p *Peer) inbox(depth int) *inbox {
	if depth > 0 {
		return &p.in[1]
	}
	return &p.in[0]
}

// Reassembly limits (docs/protocol.md §5, "Limits"): a member receives the host's snapshots, up
// to netmsg.DefaultMaxTotal; a host receives only greetings, RPCs and corrections, so a member can
// make it hold no more than hostReassemblyLimit. A payload unfinished after reassemblyTimeout
// ends the link: on an ordered reliable channel its rest is never coming.
const (
	hostReassemblyLimit = maxCorrectionBytes + 64<<10
	reassemblyTimeout   = 30 * time.Second
)

// sizeReassembly gives r, between two payloads, the reassembler its direction needs, and notes
// when the next payload starts.
func (p *Peer) sizeReassembly(r *remote) {
	if r.reasm.InProgress() {
		return
	}
	if host := p.host != nil; r.reasmHost != host {
		limit := 0 // netmsg.DefaultMaxTotal
		if host {
			limit = hostReassemblyLimit
		}
		r.reasm, r.reasmHost = netmsg.NewReassembler(netmsg.Config{MaxTotal: limit}), host
	}
	r.reasmAt = p.clock.Now()
	if p.reasmDue.IsZero() {
		// Later payloads start later: the first one unfinished is the first due.
		p.reasmDue = r.reasmAt.Add(reassemblyTimeout)
	}
}

// expireReassembly closes the links whose fragmented payload is unfinished after
// reassemblyTimeout, freeing what they buffered.
// It walks the links only once the earliest payload that may still be unfinished is due
// (p.reasmDue), not at every flush: an idle host's flush walked every member's link 20 times a
// second for payloads that are rarely fragmented and never 30 s old.
func (p *Peer) expireReassembly(now time.Time) {
	if p.reasmDue.IsZero() || !now.After(p.reasmDue) {
		return
	}
	p.reasmDue = time.Time{}
	for _, r := range p.remotes {
		if r.reasm == nil || !r.reasm.InProgress() {
			continue
		}
		if now.Sub(r.reasmAt) > reassemblyTimeout {
			p.count.refuse(RefusedReassembly)
			p.log.Warn().Uint64("peer", uint64(r.idx)).Int("buffered", r.reasm.Buffered()).Msg("fragmented payload unfinished after 30s; closing link")
			r.reasm.Reset()
			p.drop(r)
			continue
		}
		if due := r.reasmAt.Add(reassemblyTimeout); p.reasmDue.IsZero() || due.Before(p.reasmDue) {
			p.reasmDue = due
		}
	}
}
