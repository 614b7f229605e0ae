package netmsg

import (
	"encoding/binary"
	"fmt"
)

// Body sizes of the session extensions.
const (
	stampBodySize    = 8
	digestHeaderSize = 8 + 4 + 2
	// MaxDigestBuckets bounds a Digest's bucket count (peer.Config.Buckets).
	MaxDigestBuckets = 4096
)

// Stamp is the Lamport time of the HostCommands that follows it in the same
// payload (TRNP's HostCommands carries no time; the spawned values and the
// authority records need one).
type Stamp struct {
	Time uint64
}

// Digest is a member's per-bucket replica digests (bucket = entity number %
// len(Digests)); the host answers with a HostSnapshot of the buckets that
// differ. Decoded Digests reuses the caller's slice.
type Digest struct {
	Term    uint64
	Clock   uint32
	Digests []uint64
}

// AppendStamp appends m to dst.
func AppendStamp(dst []byte, m *Stamp) []byte {
	dst = append(dst, byte(TypeStamp))
	dst = binary.LittleEndian.AppendUint32(dst, stampBodySize)
	return binary.LittleEndian.AppendUint64(dst, m.Time)
}

// ConsumeStamp decodes the Stamp at the start of b into m and returns its
// length. A nil m validates only. Every error is a *ProtocolError.
func ConsumeStamp(b []byte, m *Stamp) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeStamp)
	if !d.checkBody(body, stampBodySize, true) {
		return d.result()
	}
	t := d.u64("time")
	if d.err == nil && m != nil {
		m.Time = t
	}
	return d.result()
}

// AppendDigest appends m to dst. It panics when m has no digest or more than
// MaxDigestBuckets (an invariant of the sender's configuration).
func AppendDigest(dst []byte, m *Digest) []byte {
	if len(m.Digests) == 0 || len(m.Digests) > MaxDigestBuckets {
		panic(fmt.Sprintf("netmsg: Digest of %d buckets", len(m.Digests)))
	}
	dst = append(dst, byte(TypeDigest))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(digestHeaderSize+8*len(m.Digests)))
	dst = binary.LittleEndian.AppendUint64(dst, m.Term)
	dst = binary.LittleEndian.AppendUint32(dst, m.Clock)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(m.Digests)))
	for _, x := range m.Digests {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst
}

// ConsumeDigest decodes the Digest at the start of b into m and returns its
// length. A nil m validates only. The bucket count must be 1 to
// MaxDigestBuckets and fill the body exactly. Every error is a
// *ProtocolError.
func ConsumeDigest(b []byte, m *Digest) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeDigest)
	if !d.checkBody(body, digestHeaderSize, false) {
		return d.result()
	}
	term := d.u64("term")
	clock := d.u32("clock")
	at := d.off
	count := int(d.u16("bucket count"))
	if d.err == nil && (count == 0 || count > MaxDigestBuckets || body != digestHeaderSize+8*count) {
		d.failf(at, ErrBodyLength, "Digest of %d buckets in a body of %d bytes", count, body)
	}
	if d.err != nil {
		return d.result()
	}
	if m == nil {
		d.off += 8 * count
		return d.result()
	}
	m.Term, m.Clock = term, clock
	m.Digests = resize(m.Digests, count)
	for i := range m.Digests {
		m.Digests[i] = d.u64("digest")
	}
	return d.result()
}
