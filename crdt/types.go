package crdt

import "strconv"

// Entity is an ADR-117 entity id: the version in the upper 16 bits, the number in the lower 16.
type Entity uint32

// NewEntity composes an entity id from its number and version.
func NewEntity(number, version uint16) Entity {
	return Entity(uint32(version)<<16 | uint32(number))
}

// Number returns the entity number (the lower 16 bits).
func (e Entity) Number() uint16 { return uint16(e) }

// Version returns the entity version (the upper 16 bits).
func (e Entity) Version() uint16 { return uint16(e >> 16) }

// String formats the entity as "number.version", e.g. "512.1".
func (e Entity) String() string {
	return strconv.Itoa(int(e.Number())) + "." + strconv.Itoa(int(e.Version()))
}

// ComponentID identifies a component. Concord reserves ids below 1024 for itself (docs/design.md §3).
type ComponentID uint32

// Timestamp is a Lamport timestamp.
type Timestamp uint32

// MessageType is the ADR-117 message type carried in the second header word.
type MessageType uint32

// The message types of @dcl/ecs 7.x. Layouts (all uint32 little-endian, after the 8-byte header
// length|type, where length counts the whole message including the header):
const (
	// PutComponent is entity|component|timestamp|dataLen|data; length = 24 + dataLen.
	PutComponent MessageType = 1
	// DeleteComponent is entity|component|timestamp; length = 20.
	DeleteComponent MessageType = 2
	// DeleteEntity is entity; length = 12.
	DeleteEntity MessageType = 3
	// AppendValue is entity|component|timestamp|dataLen|data; length = 24 + dataLen.
	AppendValue MessageType = 4
	// PutComponentNetwork is entity|component|timestamp|networkId|dataLen|data; length = 28 + dataLen.
	PutComponentNetwork MessageType = 5
	// DeleteComponentNetwork is entity|component|timestamp|networkId; length = 24.
	DeleteComponentNetwork MessageType = 6
	// DeleteEntityNetwork is entity|networkId; 16 bytes. @dcl/ecs ≤ 7.27 writes length = 12 for
	// these 16 bytes; the decoder accepts that (see ConsumeMessage).
	DeleteEntityNetwork MessageType = 7
)

// Known reports whether t is one of the seven ADR-117 message types.
func (t MessageType) Known() bool { return t >= PutComponent && t <= DeleteEntityNetwork }

// HasData reports whether messages of type t carry a data field.
func (t MessageType) HasData() bool {
	return t == PutComponent || t == AppendValue || t == PutComponentNetwork
}

// String returns the @dcl/ecs name of the type.
func (t MessageType) String() string {
	switch t {
	case PutComponent:
		return "PUT_COMPONENT"
	case DeleteComponent:
		return "DELETE_COMPONENT"
	case DeleteEntity:
		return "DELETE_ENTITY"
	case AppendValue:
		return "APPEND_VALUE"
	case PutComponentNetwork:
		return "PUT_COMPONENT_NETWORK"
	case DeleteComponentNetwork:
		return "DELETE_COMPONENT_NETWORK"
	case DeleteEntityNetwork:
		return "DELETE_ENTITY_NETWORK"
	}
	return "MessageType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Message is one decoded ADR-117 message. Fields a type does not carry are zero.
//
// Data aliases the decoded input (valid until that buffer is reused). For PUT and APPEND a nil
// Data is the same value as an empty one: an empty value is a valid value, distinct from a
// deleted component. For a message of an unknown type, Data holds the whole body after the
// 8-byte header, so that AppendMessage re-encodes it unchanged.
type Message struct {
	Type      MessageType
	Entity    Entity
	Component ComponentID
	Timestamp Timestamp
	NetworkID uint32
	Data      []byte
}

// Outcome is the result of merging one message into a replica.
type Outcome uint8

// Merge outcomes.
const (
	// NoChange: the message is already reflected in the state (an identical value, a deletion
	// already known, an append value already present or below the retention bound).
	NoChange Outcome = iota
	// Applied: the message changed the state; a relay should forward it.
	Applied
	// Outdated: the local value for the key wins; AppendCorrection produces the corrective
	// message (the ADR-117 corrective PUT or DELETE_COMPONENT).
	Outdated
	// Ignored: the message is for a deleted entity version; AppendCorrection produces the
	// DELETE_ENTITY that tells the sender.
	Ignored
	// Invalid: the message type is unknown; nothing was changed.
	Invalid
)

// String returns the outcome name.
func (o Outcome) String() string {
	switch o {
	case NoChange:
		return "NoChange"
	case Applied:
		return "Applied"
	case Outdated:
		return "Outdated"
	case Ignored:
		return "Ignored"
	case Invalid:
		return "Invalid"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}
