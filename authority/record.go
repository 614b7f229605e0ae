package authority

import (
	"encoding/binary"
	"fmt"
)

// Kind says who writes an entity.
type Kind uint8

// The kinds of authority. The zero value is KindHost, so the zero Record is
// "host-owned", the default of every entity.
const (
	KindHost   Kind = 0 // the host of the current term writes it
	KindAvatar Kind = 1 // Record.Peer's avatar, written by that peer
	KindLock   Kind = 2 // a host entity temporarily locked by Record.Peer
)

func (k Kind) String() string {
	switch k {
	case KindHost:
		return "host"
	case KindAvatar:
		return "avatar"
	case KindLock:
		return "lock"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Record is the authority of one entity. Host records name no peer (Peer is
// 0), because the host changes with the term while the record must not.
type Record struct {
	Kind Kind
	Peer PeerIndex // the avatar's owner or the lock's holder
}

// RecordSize is the encoded size of a Record.
const RecordSize = 9

// AppendRecord appends the canonical encoding of r to dst: the value of the
// authority CRDT component (component id 2).
//
//	 0        1                                    9
//	+--------+------------------------------------+
//	|  kind  |       peer (uint64, little-endian) |
//	+--------+------------------------------------+
//
// kind is 0 host, 1 avatar, 2 lock; a host record has peer 0. Every Record
// that ConsumeRecord accepts has exactly one encoding; AppendRecord writes r as
// given, so a Record it would reject does not round-trip.
func AppendRecord(dst []byte, r Record) []byte {
	dst = append(dst, byte(r.Kind))
	return binary.LittleEndian.AppendUint64(dst, uint64(r.Peer))
}

// ConsumeRecord decodes one record from the start of b into r and returns the
// number of bytes read, RecordSize. Bytes after it are left to the caller. On
// error it returns 0 and leaves r unchanged.
func ConsumeRecord(b []byte, r *Record) (int, error) {
	if len(b) < RecordSize {
		return 0, fmt.Errorf("%w: %d of %d bytes", ErrShortRecord, len(b), RecordSize)
	}
	k, p := Kind(b[0]), PeerIndex(binary.LittleEndian.Uint64(b[1:RecordSize]))
	switch k {
	case KindHost:
		if p != 0 {
			return 0, fmt.Errorf("%w: host record names peer %d", ErrNonCanonical, p)
		}
	case KindAvatar, KindLock:
	default:
		return 0, fmt.Errorf("%w: %d", ErrUnknownKind, uint8(k))
	}
	*r = Record{Kind: k, Peer: p}
	return RecordSize, nil
}
