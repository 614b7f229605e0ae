package peer

import (
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// App is a game built on Concord. Every method runs on the peer's loop goroutine with the
// world it may read and write; none may block.
type App interface {
	// Schemas is the schema table every peer of the room runs.
	Schemas() *schema.Table
	// HostStart runs when this peer becomes the host, before it serves any member. The world holds
	// what the replica holds: nothing in a new room, everything a migration kept otherwise. A game
	// spawns its initial world here when the world is empty.
	HostStart(w *World)
	// SpawnAvatar spawns the avatar of member p, which has just arrived (host only). It returns
	// the zero entity and no error when the member gets no avatar. The peer gives the member
	// authority over the entity.
	SpawnAvatar(w *World, p PeerInfo) (Entity, error)
	// Tick runs at the tick rate on every peer: the host's systems when w.IsHost(), and the local
	// player's input (moving its avatar, grabbing) everywhere.
	Tick(w *World, dt time.Duration)
	// RPC handles an application RPC: on the host, from a member's PeerCommands; on a member, from
	// the host's HostCommands.
	RPC(w *World, from PeerIndex, typ uint32, data []byte)
}

// Idler is implemented by an App whose Tick has nothing to do on a member at times (a bot that
// only receives, a spectator, a player with no input). While this peer is a synced member and
// Idle returns true, Tick does not run and the peer sleeps: its loop wakes only for what arrives,
// to send what it has to send (its own writes, acknowledgements, queued messages), for a status
// report when its state changed (at most every ReportInterval) or is due a keepalive
// (ReportKeepalive), and for its adaptive digests (docs/protocol.md §5, "Idle members"). The peer
// asks after every loop step; the host always ticks. An App that is not an Idler ticks
// everywhere, at TickInterval.
type Idler interface {
	Idle(w *World) bool
}

// EventHandler is implemented by apps that want to hear what happened to the world.
type EventHandler interface {
	OnEvent(w *World, ev Event)
}

// PeerInfo describes a member of the room.
type PeerInfo struct {
	Index PeerIndex
	ID    string // identity, "user/device"
	Kind  string // "browser", "bot" or "host"
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	EventSpawned EventKind = iota + 1
	EventUpdated
	EventDespawned
	EventAuthority
	EventPeerEntered
	// EventPeerExited: member Peer left the room (on the host too, once its avatar and locks
	// are gone).
	EventPeerExited
	// EventHostChanged: a new host term began (Term, Peer = the host).
	EventHostChanged
	// EventMigrating: the host went away; side-effect systems should pause until EventSynced.
	EventMigrating
	// EventSynced: this peer holds the host's world (after joining or after a migration).
	EventSynced
	// EventAppended: a value joined the append set (Entity, Component); read it with Values.
	EventAppended
	// EventUnset: properties of Entity were deleted (Props), by Unset here or elsewhere.
	EventUnset
	// EventLeftInterest: the host no longer sends this member Entity (InterestPolicy); it is
	// dropped from the replica, not deleted, and comes back if it enters the interest again.
	EventLeftInterest
	// EventRenumbered (host): Entity is From moved to a fresh number, with the same schema,
	// creation, values and authority, because a member holds From's number deleted at From's
	// version or above and would never take it (host_supersede.go). Apps that keep entity ids
	// replace From by Entity.
	EventRenumbered
)

func (k EventKind) String() string {
	switch k {
	case EventSpawned:
		return "spawned"
	case EventUpdated:
		return "updated"
	case EventDespawned:
		return "despawned"
	case EventAuthority:
		return "authority"
	case EventPeerEntered:
		return "peer-entered"
	case EventPeerExited:
		return "peer-exited"
	case EventHostChanged:
		return "host-changed"
	case EventMigrating:
		return "migrating"
	case EventSynced:
		return "synced"
	case EventAppended:
		return "appended"
	case EventUnset:
		return "unset"
	case EventLeftInterest:
		return "left-interest"
	case EventRenumbered:
		return "renumbered"
	}
	return "unknown"
}

// Event is one thing that happened to the world or the room.
type Event struct {
	Kind      EventKind
	Entity    Entity
	Props     uint32           // EventUpdated, EventUnset: the properties that changed
	Component crdt.ComponentID // EventAppended: the append set
	Peer      PeerIndex
	Term      Term
	From      Entity // EventRenumbered: the entity's previous id
}

// InterestPolicy is implemented by host apps that send each member only the entities that matter
// to it (interest management: a radius around its avatar, a room of a building). Interest reports
// whether member follows e; it runs on the host every Config.InterestInterval for every member
// and live entity, and for each spawn, so it must be cheap. Whatever it says, a member follows
// the room entity and the entities it writes (its avatar, its locks), and the member signaling
// would elect next follows everything, so that a migration loses nothing. An entity that leaves a
// member's interest is dropped from its replica (EventLeftInterest), one that enters it arrives as
// in a late join.
type InterestPolicy interface {
	Interest(w *World, member PeerIndex, e Entity) bool
}

// MessageHandler is implemented by apps that receive application messages (types 128–255, sent
// with World.SendMessage). from is the sender: the host, or the member a relayed message came
// from. data aliases the payload: copy it to keep it.
type MessageHandler interface {
	Message(w *World, from PeerIndex, typ uint8, data []byte)
}

// ActionHandler is implemented by apps that receive TRNP Actions (World.SendAction): a member's
// input on the host, the host's actions on members. An app without it gets Actions in RPC, as
// before. data aliases the payload.
type ActionHandler interface {
	Action(w *World, from PeerIndex, typ uint32, data []byte)
}

// RelayPolicy is implemented by host apps that decide which application messages one member
// may send another through the host (to is Everyone for a broadcast). Without it every message
// within the limits passes.
type RelayPolicy interface {
	AllowRelay(w *World, from, to PeerIndex, typ uint8) bool
}

// AppendPolicy is implemented by host apps that let members append to sets of entities they do
// not write (a chat log on the room entity). Without it a member appends only to the entities it
// has authority over.
type AppendPolicy interface {
	AllowAppend(w *World, from PeerIndex, e Entity, c crdt.ComponentID, value []byte) bool
}

// System RPC types: the top of the RPC type space belongs to Concord.
const (
	// FirstSystemRPC is the lowest RPC type reserved for Concord; apps use types below it.
	FirstSystemRPC uint32 = 0xffffff00
	// rpcLockRequest asks the host for a temporary lock on entity (u32 LE).
	rpcLockRequest = FirstSystemRPC + 1
	// rpcRelinquish hands a lock on entity (u32 LE) back to the host.
	rpcRelinquish = FirstSystemRPC + 2
	// rpcAppend asks the host to append a value: entity u32 LE | component u32 LE | value.
	rpcAppend = FirstSystemRPC + 3
)
