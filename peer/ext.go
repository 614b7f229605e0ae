package peer

import (
	"encoding/binary"
	"fmt"

	"github.com/concordrtc/concord/netmsg"
)

// Concord session extensions that the peer layer defines on top of netmsg's framing
// (type u8 | bodyLength u32 | body). They are documented in docs/protocol.md.
const (
	// typeStamp: time u64 — the Lamport time of the HostCommands that follows in the same payload
	// (TRNP's HostCommands carries no time; spawned values and authority records need one).
	typeStamp = netmsg.TypeStamp
	// typeDigest: term u64 | clock u32 | bucketCount u16 | digests [bucketCount]u64 — a member's
	// per-bucket replica digests; the host answers with a HostSnapshot of the buckets that differ.
	typeDigest = netmsg.TypeDigest
)

const maxDigestBuckets = 4096

func appendStamp(dst []byte, t uint64) []byte {
	var body [8]byte
	binary.LittleEndian.PutUint64(body[:], t)
	return netmsg.AppendExt(dst, typeStamp, body[:])
}

func parseStamp(body []byte) (uint64, error) {
	if len(body) != 8 {
		return 0, fmt.Errorf("%w: stamp body of %d bytes", errMalformed, len(body))
	}
	return binary.LittleEndian.Uint64(body), nil
}

type digestMsg struct {
	term    uint64
	clock   uint32
	digests []uint64
}

func appendDigest(dst []byte, d *digestMsg) []byte {
	b, mark := netmsg.StartExt(dst, typeDigest)
	b = binary.LittleEndian.AppendUint64(b, d.term)
	b = binary.LittleEndian.AppendUint32(b, d.clock)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(d.digests)))
	for _, x := range d.digests {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return netmsg.FinishExt(b, mark)
}

func parseDigest(body []byte, d *digestMsg) error {
	if len(body) < 14 {
		return fmt.Errorf("%w: digest body of %d bytes", errMalformed, len(body))
	}
	d.term = binary.LittleEndian.Uint64(body)
	d.clock = binary.LittleEndian.Uint32(body[8:])
	n := int(binary.LittleEndian.Uint16(body[12:]))
	if n == 0 || n > maxDigestBuckets || len(body) != 14+8*n {
		return fmt.Errorf("%w: digest of %d buckets in %d bytes", errMalformed, n, len(body))
	}
	d.digests = d.digests[:0]
	for i := range n {
		d.digests = append(d.digests, binary.LittleEndian.Uint64(body[14+8*i:]))
	}
	return nil
}
