package netmsg

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Minimum encoded sizes of the structs, used to bound counts before any
// slice grows.
const (
	minPeerInfoSize          = 8 + 4
	minSpawnSize             = 8 + 4 + 4 + 4
	despawnSize              = 8
	authorityTransferSize    = 8 + 8
	minRPCSize               = 4 + 4
	minUpdateSize            = 8 + 2 + 1
	updateHeaderSize         = 8 + 2
	entityUpdatesHeaderSize  = 1 + 8 + 4
	entityUpdatesCountOffset = 1 + 8
)

// PeerInfo names a peer of the session.
//
//	peerIndex u64 | peerIdLength u32 | peerId [peerIdLength]byte
//
// PeerID is at most MaxPeerIDLen bytes of valid UTF-8. Decoding copies it
// into a string (reusing the current one when the bytes are equal), so it
// stays valid after the input is reused.
type PeerInfo struct {
	PeerIndex uint64
	PeerID    string
}

// Spawn creates a networked entity.
//
//	networkId u64 | schemaId u32 | creationDataLength u32 | creationData |
//	updateDataLength u32 | updateData
//
// NetworkID carries the ADR-117 entity (number | version<<16) in its low 32
// bits; the codec does not enforce that the upper 32 bits are zero.
type Spawn struct {
	NetworkID    uint64
	SchemaID     uint32
	CreationData []byte
	UpdateData   []byte
}

// Despawn deletes a networked entity.
//
//	networkId u64
type Despawn struct {
	NetworkID uint64
}

// AuthorityTransfer hands an entity to a new authoring peer.
//
//	networkId u64 | newAuthorIndex u64
type AuthorityTransfer struct {
	NetworkID      uint64
	NewAuthorIndex uint64
}

// RPC is a remote procedure call.
//
//	type u32 | dataLength u32 | data
type RPC struct {
	Type uint32
	Data []byte
}

// Action is a replayable action.
//
//	type u32 | dataLength u32 | data
type Action struct {
	Type uint32
	Data []byte
}

// Width is the size of an Update's property mask. Its value is the wire
// code in bits 15..14 of lengthAndWidth.
type Width uint8

// Mask widths. Code 3 is invalid on the wire.
const (
	Width8  Width = 0 // u8 mask, schemas of up to 8 properties
	Width16 Width = 1 // u16 mask, up to 16 properties
	Width32 Width = 2 // u32 mask, up to 32 properties
)

// MaskWidth returns the mask width of a schema with propertyCount
// properties: ≤ 8 → Width8, ≤ 16 → Width16, ≤ 32 → Width32. Other counts
// return an error wrapping ErrInvalidMaskWidth.
func MaskWidth(propertyCount int) (Width, error) {
	switch {
	case propertyCount < 0 || propertyCount > MaxProperties:
		return 0, fmt.Errorf("%w: %d properties (0–%d supported)", ErrInvalidMaskWidth, propertyCount, MaxProperties)
	case propertyCount <= 8:
		return Width8, nil
	case propertyCount <= 16:
		return Width16, nil
	default:
		return Width32, nil
	}
}

// Valid reports whether w is one of Width8, Width16, Width32.
func (w Width) Valid() bool { return w <= Width32 }

// Bytes returns the mask size in bytes (1, 2 or 4), or 0 for an invalid w.
func (w Width) Bytes() int {
	if !w.Valid() {
		return 0
	}
	return 1 << w
}

// Bits returns the mask size in bits (8, 16 or 32), or 0 for an invalid w.
func (w Width) Bits() int { return 8 * w.Bytes() }

func (w Width) String() string {
	if !w.Valid() {
		return fmt.Sprintf("Width(%d)", uint8(w))
	}
	return fmt.Sprintf("u%d", w.Bits())
}

// Update carries changed properties of one entity.
//
//	networkId u64 | lengthAndWidth u16 | mask (1, 2 or 4 bytes) | data
//
// lengthAndWidth holds the Width code in bits 15..14 and len(Data) in bits
// 13..0, so a receiver can skip an update without knowing its schema. Bit i
// of Mask set means property i of the schema is present in Data. Decoded
// Data aliases the input: it is valid until the input is reused.
type Update struct {
	NetworkID uint64
	Width     Width
	Mask      uint32
	Data      []byte
}

// CheckMask checks u against a schema of propertyCount properties: the
// width must be MaskWidth(propertyCount) and no bit at or above
// propertyCount may be set. A mismatch returns an error wrapping
// ErrMaskMismatch, which means "drop this update", not "close the peer".
func (u *Update) CheckMask(propertyCount int) error {
	w, err := MaskWidth(propertyCount)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMaskMismatch, err)
	}
	if u.Width != w {
		return fmt.Errorf("%w: width %v, schema of %d properties needs %v", ErrMaskMismatch, u.Width, propertyCount, w)
	}
	if propertyCount < 32 && u.Mask>>propertyCount != 0 {
		return fmt.Errorf("%w: mask %#x sets bits past property %d", ErrMaskMismatch, u.Mask, propertyCount-1)
	}
	return nil
}

// SizeUpdate returns the encoded size of u.
func SizeUpdate(u *Update) int {
	return updateHeaderSize + u.Width.Bytes() + len(u.Data)
}

// AppendUpdate appends u to dst. It panics when u cannot be encoded: an
// invalid Width, a Mask with bits beyond its Width, or Data longer than
// MaxUpdateData. Those are bugs in the caller.
func AppendUpdate(dst []byte, u *Update) []byte {
	if !u.Width.Valid() || len(u.Data) > MaxUpdateData || (u.Width != Width32 && u.Mask>>u.Width.Bits() != 0) {
		panic(fmt.Sprintf("netmsg: cannot encode Update: width %v, mask %#x, %d data bytes", u.Width, u.Mask, len(u.Data)))
	}
	dst = binary.LittleEndian.AppendUint64(dst, u.NetworkID)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(u.Width)<<14|uint16(len(u.Data)))
	return append(appendMask(dst, u.Width, u.Mask), u.Data...)
}

// appendMask appends mask in w's width, little-endian.
func appendMask(dst []byte, w Width, mask uint32) []byte {
	switch w {
	case Width8:
		dst = append(dst, byte(mask))
	case Width16:
		dst = binary.LittleEndian.AppendUint16(dst, uint16(mask))
	case Width32:
		dst = binary.LittleEndian.AppendUint32(dst, mask)
	}
	return dst
}

// mask reads a mask of width w (valid).
func (d *decoder) mask(w Width) uint32 {
	switch w {
	case Width8:
		return uint32(d.u8("mask"))
	case Width16:
		return uint32(d.u16("mask"))
	}
	return d.u32("mask")
}

func (d *decoder) update(u *Update) {
	// Fast path: the whole update is present. Anything else takes the
	// field-by-field path, which reports the exact error.
	if d.err != nil {
		return
	}
	b := d.b[d.off:]
	if len(b) < updateHeaderSize {
		d.updateSlow(u)
		return
	}
	lw := binary.LittleEndian.Uint16(b[8:])
	w := Width(lw >> 14)
	end := updateHeaderSize + w.Bytes() + int(lw&MaxUpdateData)
	if !w.Valid() || len(b) < end {
		d.updateSlow(u)
		return
	}
	d.off += end
	if u == nil {
		return
	}
	var mask uint32
	switch w {
	case Width8:
		mask = uint32(b[updateHeaderSize])
	case Width16:
		mask = uint32(binary.LittleEndian.Uint16(b[updateHeaderSize:]))
	default:
		mask = binary.LittleEndian.Uint32(b[updateHeaderSize:])
	}
	// Field by field: a composite literal here costs a temporary and a
	// typed copy per update.
	u.NetworkID = binary.LittleEndian.Uint64(b)
	u.Width = w
	u.Mask = mask
	u.Data = b[end-int(lw&MaxUpdateData) : end : end]
}

func (d *decoder) updateSlow(u *Update) {
	id := d.u64("network id")
	at := d.off
	lw := d.u16("length and width")
	if d.err != nil {
		return
	}
	w := Width(lw >> 14)
	if !w.Valid() {
		d.failf(at, ErrInvalidMaskWidth, "width code %d", w)
		return
	}
	mask := d.mask(w)
	data := d.blob(uint64(lw&MaxUpdateData), "update data")
	if d.err != nil || u == nil {
		return
	}
	*u = Update{NetworkID: id, Width: w, Mask: mask, Data: data}
}

func appendPeerInfo(dst []byte, p *PeerInfo) []byte {
	if err := ValidPeerID(p.PeerID); err != nil {
		panic(fmt.Sprintf("netmsg: cannot encode PeerInfo %d: %v (check ids with ValidPeerID)", p.PeerIndex, err))
	}
	dst = binary.LittleEndian.AppendUint64(dst, p.PeerIndex)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(p.PeerID)))
	return append(dst, p.PeerID...)
}

func (d *decoder) peerInfo(p *PeerInfo) {
	idx := d.u64("peer index")
	at := d.off
	n := d.u32("peer id length")
	if d.err != nil {
		return
	}
	if n > MaxPeerIDLen {
		d.failf(at, ErrInvalidPeerID, "length %d exceeds %d", n, MaxPeerIDLen)
		return
	}
	id := d.blob(uint64(n), "peer id")
	if d.err != nil {
		return
	}
	if !utf8.Valid(id) {
		d.failf(at+4, ErrInvalidPeerID, "not valid UTF-8")
		return
	}
	if p != nil {
		p.PeerIndex = idx
		setString(&p.PeerID, id)
	}
}

func appendSpawn(dst []byte, s *Spawn) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, s.NetworkID)
	dst = binary.LittleEndian.AppendUint32(dst, s.SchemaID)
	dst = appendBlob32(dst, s.CreationData, "Spawn creation data length")
	return appendBlob32(dst, s.UpdateData, "Spawn update data length")
}

func (d *decoder) spawn(s *Spawn) {
	id := d.u64("network id")
	schema := d.u32("schema id")
	cd := d.blob(uint64(d.u32("creation data length")), "creation data")
	ud := d.blob(uint64(d.u32("update data length")), "update data")
	if d.err != nil || s == nil {
		return
	}
	s.NetworkID, s.SchemaID, s.CreationData, s.UpdateData = id, schema, cd, ud
}

func appendCall(dst []byte, typ uint32, data []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, typ)
	return appendBlob32(dst, data, "RPC/Action data length")
}

func (d *decoder) call() (typ uint32, data []byte) {
	typ = d.u32("call type")
	data = d.blob(uint64(d.u32("call data length")), "call data")
	return typ, data
}

// appendCount appends a u32 element count.
func appendCount(dst []byte, n int) []byte {
	if uint64(n) > math.MaxUint32 {
		panic(fmt.Sprintf("netmsg: count %d does not fit in u32", n))
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}
