package peer

import (
	"encoding/binary"
	"fmt"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// The application API beyond properties: deleting a property, append sets, application
// messages, Actions and authority grants. Each checks what it can locally and hands the rest to
// the role (changeSink), which knows whether this peer is the host.

// Everyone addresses an application message to every member of the room but its sender.
const Everyone PeerIndex = 0

// Limits of the application API (docs/protocol.md §5, "Limits"). Each is enforced by the sender
// (an error) and again by the host (the message is dropped and counted).
const (
	// MaxMessage is the largest reliable application message (data only).
	MaxMessage = 16 << 10
	// MaxUnreliableMessage is the largest unreliable application message: one datagram, with the
	// room for a relay header, so that a member's message can be relayed unchanged.
	MaxUnreliableMessage = netmsg.MaxDatagram - netmsg.RelayOverhead
	// MaxAction is the largest Action's data.
	MaxAction = 4 << 10
	// MaxAppendValue is the largest value of an append set.
	MaxAppendValue = 1 << 10
)

// SendMessage sends an application message of type typ (128–255) to peer to: the host, a member
// (relayed by the host) or Everyone. Reliable messages arrive once and in order; unreliable ones
// may be lost, come out of order, and must fit one datagram (MaxUnreliableMessage). The receiver's
// app gets it through MessageHandler. It fails when this peer has no host link yet (ErrClosed).
func (w *World) SendMessage(to PeerIndex, typ uint8, data []byte, reliable bool) error {
	if !netmsg.Type(typ).IsApplication() {
		return fmt.Errorf("%w: %d", ErrBadMessageType, typ)
	}
	if limit := messageLimit(reliable); len(data) > limit {
		return fmt.Errorf("%w: message of %d bytes, limit %d", ErrTooLarge, len(data), limit)
	}
	if to == w.self {
		return fmt.Errorf("%w: %d is this peer", ErrNoPeer, to)
	}
	return w.sink.sendMessage(to, typ, data, reliable)
}

func messageLimit(reliable bool) int {
	if reliable {
		return MaxMessage
	}
	return MaxUnreliableMessage
}

// SendAction sends a TRNP Action: a member's goes to the host's ActionHandler, the host's to
// every member's (in HostCommands). Actions are reliable and ordered.
func (w *World) SendAction(typ uint32, data []byte) error {
	if len(data) > MaxAction {
		return fmt.Errorf("%w: action of %d bytes, limit %d", ErrTooLarge, len(data), MaxAction)
	}
	return w.sink.sendAction(typ, data)
}

// Unset deletes property prop of e (an ADR-117 DELETE_COMPONENT of the property's component),
// with the authority Set needs. Get then reports the property absent until it is set again.
func (w *World) Unset(e Entity, prop int) error {
	in, err := w.writable(e, prop)
	if err != nil {
		return err
	}
	c := in.schema.Properties[prop].Component
	if _, _, ok, deleted := w.r.Get(e, c); !ok || deleted {
		return nil
	}
	m := crdt.Message{Type: crdt.DeleteComponent, Entity: e, Component: c, Timestamp: w.batchStamp()}
	if w.r.Merge(&m) == crdt.Applied {
		w.observe(&m, 0)
	}
	return nil
}

// Append adds value to the append set (ADR-117 APPEND_VALUE) of component c of entity e: a
// grow-only set of distinct values that keeps the newest crdt.DefaultAppendRetention, such as a
// chat log or an input stream. c must be an application component (≥ schema.FirstAppComponent)
// that is not one of e's properties. The host appends at once; a member asks the host, which
// admits the value when the member may write e or the app's AppendPolicy allows it, and the
// value arrives with the host's relay (EventAppended) on every peer, the sender included.
// The world's bounds (Config.WorldLimits) apply: it fails with ErrWorldLimit when e carries as
// many append sets as it may and c is not one of them, or when the world (this peer's replica)
// has grown to its size bound; the host refuses a member's append past them, and past what the
// member's own writes may add, counting it (Status.RefusedBy) and striking the member.
func (w *World) Append(e Entity, c crdt.ComponentID, value []byte) error {
	if err := w.checkAppend(e, c, value); err != nil {
		return err
	}
	if err := w.appendFits(e, c, value); err != nil {
		return err
	}
	if !w.isHost {
		return w.sink.requestAppend(e, c, value)
	}
	m := crdt.Message{Type: crdt.AppendValue, Entity: e, Component: c, Timestamp: w.batchStamp(), Data: value}
	if w.r.Merge(&m) == crdt.Applied {
		w.observe(&m, 0)
	}
	return nil
}

func (w *World) checkAppend(e Entity, c crdt.ComponentID, value []byte) error {
	in := w.ents[e]
	if in == nil {
		return fmt.Errorf("%w: %v", ErrNoEntity, e)
	}
	if c < schema.FirstAppComponent {
		return fmt.Errorf("%w: %d is below %d", ErrBadComponent, c, schema.FirstAppComponent)
	}
	if _, prop := in.schema.Index(c); prop {
		return fmt.Errorf("%w: %d is a property of %s", ErrBadComponent, c, in.schema.Name)
	}
	if len(value) > MaxAppendValue {
		return fmt.Errorf("%w: value of %d bytes, limit %d", ErrTooLarge, len(value), MaxAppendValue)
	}
	return nil
}

// Values returns the append set of component c of e, oldest first (ascending Lamport time, then
// value). The slices alias the replica: valid until the world next changes.
func (w *World) Values(e Entity, c crdt.ComponentID) [][]byte {
	var out [][]byte
	w.r.RangeEntityAppend(e, func(en crdt.AppendEntry) bool {
		if en.Component == c {
			out = append(out, en.Data)
		}
		return en.Component <= c
	})
	return out
}

// Grant hands the host entity e to member to (host only): to writes it, as it writes a lock, until
// Revoke, its Relinquish, or its silence longer than the lock timeout; it is carried to every
// member as a TRNP AuthorityTransfer. Avatars cannot be granted.
func (w *World) Grant(e Entity, to PeerIndex) error {
	if !w.isHost {
		return ErrNotHost
	}
	if !w.Exists(e) {
		return fmt.Errorf("%w: %v", ErrNoEntity, e)
	}
	return w.sink.grant(e, to)
}

// Revoke gives a granted or locked entity back to the host (host only).
func (w *World) Revoke(e Entity) error {
	if !w.isHost {
		return ErrNotHost
	}
	if !w.Exists(e) {
		return fmt.Errorf("%w: %v", ErrNoEntity, e)
	}
	return w.sink.revoke(e)
}

// appendRequest encodes a member's append request (rpcAppend).
func appendRequest(e Entity, c crdt.ComponentID, value []byte) []byte {
	b := make([]byte, 8, 8+len(value))
	binary.LittleEndian.PutUint32(b, uint32(e))
	binary.LittleEndian.PutUint32(b[4:], uint32(c))
	return append(b, value...)
}
