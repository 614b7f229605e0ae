package peer

import "encoding/binary"

// RPCs and locks: the world hands them to its role (changeSink), which knows whether this peer
// is the host; without a role they fail with ErrNotHost.

// SendRPC sends an application RPC to the host (members only; the host calls its handler directly).
func (w *World) SendRPC(typ uint32, data []byte) error { return w.sink.sendRPC(typ, data, true) }

// BroadcastRPC queues an application RPC to every member (host only).
func (w *World) BroadcastRPC(typ uint32, data []byte) error { return w.sink.broadcastRPC(typ, data) }

// RequestLock asks the host for a temporary lock on e; the grant arrives as an authority change.
func (w *World) RequestLock(e Entity) error { return w.systemRPC(rpcLockRequest, e) }

// Relinquish hands a lock on e back to the host.
func (w *World) Relinquish(e Entity) error { return w.systemRPC(rpcRelinquish, e) }

func (w *World) systemRPC(typ uint32, e Entity) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(e))
	return w.sink.sendRPC(typ, b[:], false)
}
