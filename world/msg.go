package world

import (
	"encoding/binary"
	"errors"

	"github.com/concordrtc/concord/peer"
)

// The world's wire (docs/protocol.md §11): two application message types and one Action type.
const (
	// MsgResident (host → member, reliable): x u16 | y u16 | gen u32 | ack u32.
	MsgResident uint8 = 250
	// MsgAck (host → resident member, reliable): ack u32.
	MsgAck uint8 = 251
	// ActionInput (member → host): seq u32 | the app's input.
	ActionInput uint32 = 0x7f000001
	// MaxInput is the largest input data of the app.
	MaxInput = peer.MaxAction - 4
	// MaxPending is how many unacknowledged inputs a client keeps.
	MaxPending = 256
)

var errShort = errors.New("world: message too short")

// resident is a MsgResident.
type resident struct {
	X, Y     uint16
	Gen, Ack uint32
}

func appendResident(dst []byte, m resident) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, m.X)
	dst = binary.LittleEndian.AppendUint16(dst, m.Y)
	dst = binary.LittleEndian.AppendUint32(dst, m.Gen)
	return binary.LittleEndian.AppendUint32(dst, m.Ack)
}

func consumeResident(b []byte) (resident, error) {
	if len(b) != 12 {
		return resident{}, errShort
	}
	return resident{binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]),
		binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])}, nil
}

func appendInput(dst []byte, seq uint32, data []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(dst, seq), data...)
}

func consumeInput(b []byte) (uint32, []byte, error) {
	if len(b) < 4 {
		return 0, nil, errShort
	}
	return binary.LittleEndian.Uint32(b), b[4:], nil
}

// appendGen is an avatar's creation data: its handover generation.
func appendGen(dst []byte, gen uint32) []byte { return binary.LittleEndian.AppendUint32(dst, gen) }

// Gen returns the handover generation in an avatar's creation data (0 if it holds none).
func Gen(creation []byte) uint32 {
	if len(creation) != 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(creation)
}

func appendU32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }
