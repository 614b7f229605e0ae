package netmsg

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Extension frame and body sizes.
const (
	extHeaderSize      = 1 + 4
	fragmentHeaderSize = 4 + 4 + 4
	crdtBatchMinSize   = 8
	pingBodySize       = 8 + 8
	closeMinSize       = 2 + 2
	helloBodySize      = 8 + 8 + 8

	// FragmentOverhead is the size of a Fragment message without its chunk.
	FragmentOverhead = extHeaderSize + fragmentHeaderSize
)

// Fragment carries part of a payload too large for one reliable message.
// Decoded Chunk aliases the input.
type Fragment struct {
	MessageID   uint32
	TotalLength uint32
	Offset      uint32
	Chunk       []byte
}

// CrdtBatch carries a stream of ADR-117 CRDT messages (as @dcl/ecs writes
// them) stamped with the sender's host term. Decoded Messages aliases the
// input; netmsg does not parse it.
type CrdtBatch struct {
	Term     uint64
	Messages []byte
}

// Ping asks for a Pong. SendTime is the sender's monotonic clock in
// nanoseconds.
type Ping struct {
	Nonce    uint64
	SendTime uint64
}

// Pong answers a Ping, echoing its nonce and send time.
type Pong struct {
	Nonce    uint64
	EchoTime uint64
}

// Close tells a peer why it is being disconnected. Reason is UTF-8 of at
// most MaxCloseReason bytes.
type Close struct {
	Code   uint16
	Reason string
}

// Hello is the first message on a fresh link: who I am, which host term I
// believe in and which schema table I run.
type Hello struct {
	Term              uint64
	PeerIndex         uint64
	SchemaFingerprint uint64
}

// AppendExt appends an extension or application message of type t (6–255)
// with the given body. It panics when t is a TRNP type or the body does not
// fit in u32.
func AppendExt(dst []byte, t Type, body []byte) []byte {
	dst, mark := StartExt(dst, t)
	dst = append(dst, body...)
	return FinishExt(dst, mark)
}

// StartExt appends the frame header of a message of type t (6–255) with a
// placeholder body length and returns the buffer and the header's position.
// Append the body, then call FinishExt. This writes a body in place, for
// example a stream of CRDT messages, without a copy. It panics when t is a
// TRNP type.
func StartExt(dst []byte, t Type) (b []byte, mark int) {
	if !t.IsFramed() {
		panic(fmt.Sprintf("netmsg: %v does not use the extension frame", t))
	}
	mark = len(dst)
	dst = append(dst, byte(t))
	return binary.LittleEndian.AppendUint32(dst, 0), mark
}

// FinishExt sets the body length of the message StartExt began at mark to
// the bytes appended since, and returns b. It panics when mark does not
// point at a frame header in b or the body does not fit in u32.
func FinishExt(b []byte, mark int) []byte {
	if mark < 0 || mark+extHeaderSize > len(b) || !Type(b[mark]).IsFramed() {
		panic(fmt.Sprintf("netmsg: FinishExt: no frame header at %d", mark))
	}
	body := len(b) - mark - extHeaderSize
	if uint64(body) > math.MaxUint32 {
		panic(fmt.Sprintf("netmsg: extension body of %d bytes does not fit in u32", body))
	}
	binary.LittleEndian.PutUint32(b[mark+1:], uint32(body))
	return b
}

// ConsumeExt decodes the frame of the extension or application message at
// the start of b and returns its type, its body (aliasing b) and its
// length. It checks the frame only, not the body of a type this package
// defines. A TRNP message is a *ProtocolError wrapping ErrWrongType; every
// error is a *ProtocolError (for an empty b its Type is 0, as no type was
// read).
func ConsumeExt(b []byte) (t Type, body []byte, n int, err error) {
	d := decoder{b: b}
	if d.have(1, "type") {
		d.t = Type(b[0])
		if !d.t.IsFramed() {
			d.failf(0, ErrWrongType, "%v is not an extension message", d.t)
		}
		d.off = 1
	}
	body = d.blob(uint64(d.u32("body length")), "body")
	if d.err != nil {
		return d.t, nil, 0, d.err
	}
	return d.t, body, d.off, nil
}

// checkBody records ErrBodyLength unless the body length n is exactly want
// (exact) or at least want.
func (d *decoder) checkBody(n, want int, exact bool) bool {
	if d.err != nil {
		return false
	}
	if n < want || (exact && n != want) {
		rel := "at least "
		if exact {
			rel = ""
		}
		d.failf(1, ErrBodyLength, "%v body of %d bytes, want %s%d", d.t, n, rel, want)
		return false
	}
	return true
}

// AppendFragment appends m to dst. It panics when the chunk runs past
// TotalLength (Offset+len(Chunk) > TotalLength).
func AppendFragment(dst []byte, m *Fragment) []byte {
	if uint64(m.Offset)+uint64(len(m.Chunk)) > uint64(m.TotalLength) {
		panic(fmt.Sprintf("netmsg: Fragment chunk of %d bytes at %d runs past total %d", len(m.Chunk), m.Offset, m.TotalLength))
	}
	dst, mark := StartExt(dst, TypeFragment)
	dst = binary.LittleEndian.AppendUint32(dst, m.MessageID)
	dst = binary.LittleEndian.AppendUint32(dst, m.TotalLength)
	dst = binary.LittleEndian.AppendUint32(dst, m.Offset)
	dst = append(dst, m.Chunk...)
	return FinishExt(dst, mark)
}

// ConsumeFragment decodes the Fragment at the start of b into m and returns
// its length. Chunk aliases b. A chunk that runs past totalLength is an
// error wrapping ErrFragment. A nil m validates only. Every error is a
// *ProtocolError.
func ConsumeFragment(b []byte, m *Fragment) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeFragment)
	if !d.checkBody(body, fragmentHeaderSize, false) {
		return d.result()
	}
	id := d.u32("message id")
	total := d.u32("total length")
	at := d.off
	off := d.u32("offset")
	chunk := d.blob(uint64(len(d.b)-d.off), "chunk")
	if uint64(off)+uint64(len(chunk)) > uint64(total) {
		d.failf(at, ErrFragment, "chunk of %d bytes at %d runs past total %d", len(chunk), off, total)
	}
	if d.err == nil && m != nil {
		*m = Fragment{MessageID: id, TotalLength: total, Offset: off, Chunk: chunk}
	}
	return d.result()
}

// AppendCrdtBatch appends m to dst. To write the CRDT messages in place,
// use StartCrdtBatch instead.
func AppendCrdtBatch(dst []byte, m *CrdtBatch) []byte {
	dst, mark := StartCrdtBatch(dst, m.Term)
	dst = append(dst, m.Messages...)
	return FinishExt(dst, mark)
}

// StartCrdtBatch begins a CrdtBatch stamped term: append ADR-117 messages
// to b, then call FinishExt(b, mark).
func StartCrdtBatch(dst []byte, term uint64) (b []byte, mark int) {
	dst, mark = StartExt(dst, TypeCrdtBatch)
	return binary.LittleEndian.AppendUint64(dst, term), mark
}

// ConsumeCrdtBatch decodes the CrdtBatch at the start of b into m and
// returns its length. Messages aliases b and is not parsed. A nil m
// validates only. Every error is a *ProtocolError.
func ConsumeCrdtBatch(b []byte, m *CrdtBatch) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeCrdtBatch)
	if !d.checkBody(body, crdtBatchMinSize, false) {
		return d.result()
	}
	term := d.u64("term")
	msgs := d.blob(uint64(len(d.b)-d.off), "messages")
	if d.err == nil && m != nil {
		*m = CrdtBatch{Term: term, Messages: msgs}
	}
	return d.result()
}

// AppendPing appends m to dst.
func AppendPing(dst []byte, m *Ping) []byte {
	return appendPair(dst, TypePing, m.Nonce, m.SendTime)
}

// ConsumePing decodes the Ping at the start of b into m and returns its
// length. A nil m validates only. Every error is a *ProtocolError.
func ConsumePing(b []byte, m *Ping) (n int, err error) {
	d := decoder{b: b}
	nonce, t := d.pair(TypePing, "send time")
	if d.err == nil && m != nil {
		*m = Ping{Nonce: nonce, SendTime: t}
	}
	return d.result()
}

// AppendPong appends m to dst.
func AppendPong(dst []byte, m *Pong) []byte {
	return appendPair(dst, TypePong, m.Nonce, m.EchoTime)
}

// ConsumePong decodes the Pong at the start of b into m and returns its
// length. A nil m validates only. Every error is a *ProtocolError.
func ConsumePong(b []byte, m *Pong) (n int, err error) {
	d := decoder{b: b}
	nonce, t := d.pair(TypePong, "echo time")
	if d.err == nil && m != nil {
		*m = Pong{Nonce: nonce, EchoTime: t}
	}
	return d.result()
}

func appendPair(dst []byte, t Type, nonce, time uint64) []byte {
	dst = append(dst, byte(t))
	dst = binary.LittleEndian.AppendUint32(dst, pingBodySize)
	dst = binary.LittleEndian.AppendUint64(dst, nonce)
	return binary.LittleEndian.AppendUint64(dst, time)
}

func (d *decoder) pair(t Type, what string) (nonce, time uint64) {
	body := d.extFrame(t)
	if !d.checkBody(body, pingBodySize, true) {
		return 0, 0
	}
	return d.u64("nonce"), d.u64(what)
}

// AppendClose appends m to dst. A reason that is not valid UTF-8 has its
// invalid bytes replaced by U+FFFD, and a reason over MaxCloseReason bytes is
// cut at a character boundary: a reason is often built from an error
// string, and must not make the close itself fail.
func AppendClose(dst []byte, m *Close) []byte {
	reason := clipReason(m.Reason)
	dst = append(dst, byte(TypeClose))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(closeMinSize+len(reason)))
	dst = binary.LittleEndian.AppendUint16(dst, m.Code)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(reason)))
	return append(dst, reason...)
}

func clipReason(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxCloseReason {
		return s
	}
	i := MaxCloseReason
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// ConsumeClose decodes the Close at the start of b into m and returns its
// length. The reason is copied into a string. A nil m validates only. Every
// error is a *ProtocolError.
func ConsumeClose(b []byte, m *Close) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeClose)
	if !d.checkBody(body, closeMinSize, false) {
		return d.result()
	}
	code := d.u16("code")
	at := d.off
	rl := int(d.u16("reason length"))
	if rl > MaxCloseReason {
		d.failf(at, ErrInvalidReason, "length %d exceeds %d", rl, MaxCloseReason)
		return d.result()
	}
	if closeMinSize+rl != body {
		d.failf(1, ErrBodyLength, "Close body of %d bytes, reason length %d needs %d", body, rl, closeMinSize+rl)
		return d.result()
	}
	reason := d.blob(uint64(rl), "reason")
	if d.err == nil && !utf8.Valid(reason) {
		d.failf(at+2, ErrInvalidReason, "not valid UTF-8")
	}
	if d.err == nil && m != nil {
		m.Code = code
		setString(&m.Reason, reason)
	}
	return d.result()
}

// AppendHello appends m to dst.
func AppendHello(dst []byte, m *Hello) []byte {
	dst = append(dst, byte(TypeHello))
	dst = binary.LittleEndian.AppendUint32(dst, helloBodySize)
	dst = binary.LittleEndian.AppendUint64(dst, m.Term)
	dst = binary.LittleEndian.AppendUint64(dst, m.PeerIndex)
	return binary.LittleEndian.AppendUint64(dst, m.SchemaFingerprint)
}

// ConsumeHello decodes the Hello at the start of b into m and returns its
// length. A nil m validates only. Every error is a *ProtocolError.
func ConsumeHello(b []byte, m *Hello) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeHello)
	if !d.checkBody(body, helloBodySize, true) {
		return d.result()
	}
	term := d.u64("term")
	idx := d.u64("peer index")
	fp := d.u64("schema fingerprint")
	if d.err == nil && m != nil {
		*m = Hello{Term: term, PeerIndex: idx, SchemaFingerprint: fp}
	}
	return d.result()
}
