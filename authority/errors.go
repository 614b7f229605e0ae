package authority

import (
	"errors"
	"fmt"
)

// Errors of the record codec and of Restore. They are wrapped with detail;
// test for them with errors.Is.
var (
	// ErrShortRecord means that fewer than RecordSize bytes were given.
	ErrShortRecord = errors.New("authority: short record")
	// ErrUnknownKind means that a record's kind is none of the known kinds.
	ErrUnknownKind = errors.New("authority: unknown record kind")
	// ErrNonCanonical means that a host record carries a peer index other
	// than 0, so the same record would have two encodings.
	ErrNonCanonical = errors.New("authority: non-canonical record")
)

// RejectCode says why an operation was rejected.
type RejectCode uint8

// The reasons for a rejection.
const (
	// NotAuthority: the peer is not the entity's current author, or does not
	// hold the lock it tries to give back.
	NotAuthority RejectCode = iota + 1
	// LockHeld: another peer, heard from within the lock timeout, holds a
	// lock on the entity.
	LockHeld
	// TooManyLocks: the peer already holds Config.MaxLocksPerPeer locks.
	TooManyLocks
	// NotLockable: the entity cannot change hands this way. It is an avatar,
	// or reserved for the host (see ReservedNumbers), or the requester is the
	// host, which needs no lock.
	NotLockable
	// StaleTerm: a host message carries a term older than the fence's.
	StaleTerm
	// FutureTerm: a host message carries a term newer than the fence's.
	// Keep it aside until signaling announces that term (Fence.Announce).
	FutureTerm
	// NotHost: the sender is not the host of the message's term. Keep the
	// message aside in case the sender becomes host (TRNP).
	NotHost
)

var rejectCodeNames = [...]string{
	NotAuthority: "not authority",
	LockHeld:     "lock held",
	TooManyLocks: "too many locks",
	NotLockable:  "not lockable",
	StaleTerm:    "stale term",
	FutureTerm:   "future term",
	NotHost:      "not host",
}

func (c RejectCode) String() string {
	if int(c) < len(rejectCodeNames) && rejectCodeNames[c] != "" {
		return rejectCodeNames[c]
	}
	return fmt.Sprintf("RejectCode(%d)", uint8(c))
}

// Op names the operation that was rejected.
type Op uint8

// The operations that can be rejected.
const (
	OpWrite       Op = iota + 1 // Table.AdmitWrite
	OpCorrection                // Table.AdmitCorrection
	OpLock                      // Table.RequestLock
	OpRelinquish                // Table.Relinquish
	OpSetAvatar                 // Table.SetAvatar
	OpRestore                   // Table.Restore
	OpHostMessage               // Fence.Accept
	OpGrant                     // Table.Grant
)

var opNames = [...]string{
	OpWrite:       "write",
	OpCorrection:  "correction",
	OpLock:        "lock request",
	OpRelinquish:  "relinquish",
	OpSetAvatar:   "avatar assignment",
	OpRestore:     "restore",
	OpHostMessage: "host message",
	OpGrant:       "grant",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// RejectError reports one rejected operation. It means "drop this operation":
// the peer stays connected, and the table is unchanged.
type RejectError struct {
	Code RejectCode
	Op   Op
	// Peer is the peer whose operation was rejected: the writer, the lock
	// requester, the sender of a host message, or the proposed owner of an
	// avatar or a restored record.
	Peer PeerIndex
	// Entity is the entity the operation was about; 0 for OpHostMessage.
	Entity EntityID
	// Term is the term the rejected host message carried; 0 for other ops.
	Term Term
}

func (e *RejectError) Error() string {
	if e.Op == OpHostMessage {
		return fmt.Sprintf("authority: %v from peer %d at term %d rejected: %v", e.Op, e.Peer, e.Term, e.Code)
	}
	return fmt.Sprintf("authority: %v of entity %d by peer %d rejected: %v", e.Op, e.Entity, e.Peer, e.Code)
}

func reject(code RejectCode, op Op, peer PeerIndex, e EntityID) error {
	return &RejectError{Code: code, Op: op, Peer: peer, Entity: e}
}
