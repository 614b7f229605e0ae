// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

// CONCORD-PATCH: tests of Concord's changes (see CONCORD-PATCH.md).

package sctp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/transport/v5/test"
)

// legacyMarshal is packet.marshal as upstream v1.12.0 wrote it: every chunk
// through its own marshal, then padded.
func legacyMarshal(t *testing.T, p *packet, doChecksum bool) []byte {
	t.Helper()
	raw := make([]byte, packetHeaderSize)
	binary.BigEndian.PutUint16(raw[0:], p.sourcePort)
	binary.BigEndian.PutUint16(raw[2:], p.destinationPort)
	binary.BigEndian.PutUint32(raw[4:], p.verificationTag)
	for _, c := range p.chunks {
		chunkRaw, err := c.marshal()
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, chunkRaw...)
		raw = append(raw, make([]byte, getPadding(len(raw)))...)
	}
	if doChecksum {
		binary.LittleEndian.PutUint32(raw[8:], generatePacketChecksum(raw))
	}

	return raw
}

func TestMarshalToMatchesUpstream(t *testing.T) {
	data := func(n int, tsn uint32, iData, begin, end, unordered, sack bool) *chunkPayloadData {
		user := make([]byte, n)
		for i := range user {
			user[i] = byte(i*7 + n)
		}

		return &chunkPayloadData{
			iData: iData, beginningFragment: begin, endingFragment: end, unordered: unordered,
			immediateSack: sack, tsn: tsn, streamIdentifier: 3, streamSequenceNumber: 9,
			messageIdentifier: 77, fragmentSequenceNumber: 5, payloadType: PayloadTypeWebRTCBinary,
			userData: user,
		}
	}
	fwd := &chunkForwardTSN{newCumulativeTSN: 41, streams: []chunkForwardTSNStream{{identifier: 3, sequence: 8}}}
	sack := &chunkSelectiveAck{cumulativeTSNAck: 12, advertisedReceiverWindowCredit: 1 << 20}
	var packets []*packet
	for n := 0; n <= 9; n++ {
		packets = append(packets,
			&packet{sourcePort: 5000, destinationPort: 5000, verificationTag: 0xdeadbeef,
				chunks: []chunk{data(n, 100, false, n%2 == 0, n%3 == 0, n%2 == 1, n == 4)}},
			&packet{sourcePort: 5000, destinationPort: 5000, verificationTag: 1,
				chunks: []chunk{data(n, 100, true, n%2 == 0, true, false, false)}},
		)
	}
	packets = append(packets,
		&packet{sourcePort: 5000, destinationPort: 5000, verificationTag: 2,
			chunks: []chunk{fwd, data(1150, 7, false, true, true, true, false), data(3, 8, false, true, true, true, false)}},
		&packet{sourcePort: 5000, destinationPort: 5000, verificationTag: 2, chunks: []chunk{sack}},
	)
	prefix := []byte("earlier packet bytes")
	for i, p := range packets {
		for _, doChecksum := range []bool{true, false} {
			want := legacyMarshal(t, p, doChecksum)
			got, err := p.marshalTo(append([]byte(nil), prefix...), doChecksum)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("packet %d (checksum %v): marshalTo\n%x\nwant\n%x", i, doChecksum, got[len(prefix):], want)
			}
			plain, err := p.marshal(doChecksum)
			if err != nil || !bytes.Equal(plain, want) {
				t.Fatalf("packet %d: marshal %x, %v; want %x", i, plain, err, want)
			}
			var back packet
			if err := back.unmarshal(doChecksum, want); err != nil || len(back.chunks) != len(p.chunks) {
				t.Fatalf("packet %d: unmarshal: %v, %d chunks", i, err, len(back.chunks))
			}
		}
	}
}

func TestMarshalToDataPacketAllocs(t *testing.T) {
	p := &packet{sourcePort: 5000, destinationPort: 5000, verificationTag: 9, chunks: []chunk{&chunkPayloadData{
		beginningFragment: true, endingFragment: true, unordered: true, tsn: 1, payloadType: PayloadTypeWebRTCBinary,
		userData: make([]byte, 1150),
	}}}
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = p.marshalTo(buf[:0], true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("marshalTo of a DATA packet into a large enough buffer: %v allocations, want 0", allocs)
	}
}

// countingLogger counts Tracef calls; it says whether it traces when asked.
type countingLogger struct {
	logging.LeveledLogger
	tracing bool
	tracefs int
}

func (l *countingLogger) TraceEnabled() bool { return l.tracing }

func (l *countingLogger) Tracef(string, ...any) { l.tracefs++ }

type countingFactory struct{ l *countingLogger }

func (f countingFactory) NewLogger(string) logging.LeveledLogger { return f.l }

// TestTraceGuard: a logger that says it does not trace gets no Tracef calls from the guarded
// per-packet paths (whose arguments would be boxed for nothing); one that does, or one that
// cannot say (upstream's behaviour), still gets them.
func TestTraceGuard(t *testing.T) {
	for _, tracing := range []bool{false, true} {
		ca, cb := udpPiper(t)
		l := &countingLogger{LeveledLogger: logging.NewDefaultLoggerFactory().NewLogger("sctp"), tracing: tracing}
		cfg, err := buildClientConfig(WithNetConn(ca), WithLoggerFactory(countingFactory{l}))
		if err != nil {
			t.Fatal(err)
		}
		assoc := createAssociationFromConfigWithTsn(cfg, 1)
		if assoc.trace != tracing {
			t.Errorf("TraceEnabled %v: association traces %v", tracing, assoc.trace)
		}
		before := l.tracefs
		_ = assoc.handleSack(&chunkSelectiveAck{}) // not established: only its first trace
		s := assoc.createStream(1, false)
		s.packetize([]byte{1, 2, 3}, PayloadTypeWebRTCBinary) // its bufferedAmount trace
		if got := l.tracefs - before; (got != 0) == !tracing || (tracing && got != 2) {
			t.Errorf("TraceEnabled %v: handleSack made %d Tracef calls", tracing, got)
		}
		_ = assoc.close()
		_ = ca.Close()
		_ = cb.Close()
	}
	if !traces(logging.NewDefaultLoggerFactory().NewLogger("sctp")) {
		t.Error("a logger that cannot say whether it traces must be assumed to")
	}
}

// ownedMessage is a message of n bytes that no two offsets share a value at (mod 251).
func ownedMessage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}

	return b
}

func TestPacketizeOwnedAliasesTheBuffer(t *testing.T) {
	const maxPayload = 100
	msg := ownedMessage(250)
	owned, _ := newTestPacketizingStream(t, false, maxPayload).packetizeOwned(msg, PayloadTypeWebRTCBinary, true)
	copied, _ := newTestPacketizingStream(t, false, maxPayload).packetizeOwned(msg, PayloadTypeWebRTCBinary, false)
	if len(owned) != 3 || len(copied) != 3 {
		t.Fatalf("chunks: owned %d, copied %d, want 3", len(owned), len(copied))
	}
	for i, c := range owned {
		off := i * maxPayload
		if &c.userData[0] != &msg[off] {
			t.Fatalf("chunk %d does not alias the message at %d", i, off)
		}
		if cap(c.userData) != len(c.userData) {
			t.Fatalf("chunk %d: capacity %d beyond its %d bytes (an append would write into the caller's buffer)",
				i, cap(c.userData), len(c.userData))
		}
		if &copied[i].userData[0] == &msg[off] {
			t.Fatalf("copied chunk %d aliases the message", i)
		}
		// The wire: the same chunk bytes either way.
		ow, err := c.marshal()
		if err != nil {
			t.Fatal(err)
		}
		cw, err := copied[i].marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ow, cw) {
			t.Fatalf("chunk %d marshals differently owned and copied", i)
		}
	}
}

func TestPacketizeOwnedAllocs(t *testing.T) {
	msg := ownedMessage(1000)
	s := newTestPacketizingStream(t, false, 100) // 10 fragments
	copying := testing.AllocsPerRun(100, func() { s.packetizeOwned(msg, PayloadTypeWebRTCBinary, false) })
	owned := testing.AllocsPerRun(100, func() { s.packetizeOwned(msg, PayloadTypeWebRTCBinary, true) })
	t.Logf("allocations per 10-fragment message: copying %.0f, owned %.0f", copying, owned)
	if owned > copying-10 {
		t.Fatalf("owned packetize allocates %.0f, copying %.0f: want at least the 10 copies fewer", owned, copying)
	}
}

// TestWriteSCTPOwnedDelivers sends a fragmented message owned over a reliable stream whose first
// packet is lost: the retransmission reads the caller's buffer, the receiver gets the bytes, and
// the association never wrote into the buffer.
func TestWriteSCTPOwnedDelivers(t *testing.T) {
	lim := test.TimeOut(10 * time.Second)
	defer lim.Stop()

	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAssociationPair(br, a0, a1)
	s0, s1, err := establishSessionPair(br, a0, a1, 1)
	if err != nil {
		t.Fatal(err)
	}

	msg := ownedMessage(3000)
	want := append([]byte(nil), msg...)
	br.DropNextNWrites(0, 1)
	n, err := s0.WriteSCTPOwned(msg, PayloadTypeWebRTCBinary)
	if err != nil || n != len(msg) {
		t.Fatalf("WriteSCTPOwned: %d, %v", n, err)
	}
	flushBuffers(br, a0, a1)

	buf := make([]byte, 4000)
	n, ppi, err := s1.ReadSCTP(buf)
	if err != nil {
		t.Fatal(err)
	}
	if ppi != PayloadTypeWebRTCBinary || !bytes.Equal(buf[:n], want) {
		t.Fatalf("received %d bytes (ppi %d), not the %d sent", n, ppi, len(want))
	}
	if !bytes.Equal(msg, want) {
		t.Fatal("the association wrote into the owned buffer")
	}
}

// TestWriteSCTPOwnedBatch: messages written as one batch arrive whole and in order on an ordered
// stream, fragmented ones included, with the stream's counters as if written one by one, and a
// batch to a closed stream writes nothing.
func TestWriteSCTPOwnedBatch(t *testing.T) {
	lim := test.TimeOut(10 * time.Second)
	defer lim.Stop()

	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAssociationPair(br, a0, a1)
	s0, s1, err := establishSessionPair(br, a0, a1, 1)
	if err != nil {
		t.Fatal(err)
	}

	sizes := []int{10, 3000, 1, 1200, 2500}
	var batch, want [][]byte
	total := 0
	for i, n := range sizes {
		m := ownedMessage(n)
		m[0] = byte(i)
		batch = append(batch, m)
		want = append(want, append([]byte(nil), m...))
		total += n
	}
	seq := s0.sequenceNumber
	if err := s0.WriteSCTPOwnedBatch(batch, PayloadTypeWebRTCBinary); err != nil {
		t.Fatal(err)
	}
	if got := s0.sequenceNumber - seq; got != uint16(len(sizes)) {
		t.Errorf("stream sequence advanced by %d for %d messages", got, len(sizes))
	}
	if got := s0.BufferedAmount(); got != uint64(total) {
		t.Errorf("buffered %d bytes after the batch, want %d", got, total)
	}
	flushBuffers(br, a0, a1)

	buf := make([]byte, 4000)
	for i := range sizes {
		n, ppi, err := s1.ReadSCTP(buf)
		if err != nil {
			t.Fatal(err)
		}
		if ppi != PayloadTypeWebRTCBinary || !bytes.Equal(buf[:n], want[i]) {
			t.Fatalf("message %d: received %d bytes (ppi %d), want the %d sent", i, n, ppi, len(want[i]))
		}
	}
	for i := range batch {
		if !bytes.Equal(batch[i], want[i]) {
			t.Fatalf("the association wrote into owned message %d", i)
		}
	}

	tooLarge := [][]byte{ownedMessage(10), make([]byte, a0.MaxMessageSize()+1)}
	if err := s0.WriteSCTPOwnedBatch(tooLarge, PayloadTypeWebRTCBinary); !errors.Is(err, ErrOutboundPacketTooLarge) {
		t.Fatalf("a batch with a message over the limit: %v", err)
	}
	if got := s0.BufferedAmount(); got != 0 {
		t.Fatalf("a refused batch left %d bytes buffered", got)
	}
}

// waitFor ticks the bridge until cond holds or 5 s pass.
func waitFor(t *testing.T, br *test.Bridge, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if br.Tick() == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// TestAckCoalescing (item 9): with coalescing on, a burst of unordered DATA packets is
// acknowledged by one SACK when the shortened delayed-ack timer fires, not one per second packet
// (without the patch, 3 packets get a SACK after the second and an ack timeout for the third); a
// gap is still acknowledged at once, before the window ends; ordered DATA is not coalesced.
func TestAckCoalescing(t *testing.T) {
	lim := test.TimeOut(20 * time.Second)
	defer lim.Stop()

	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNormal, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAssociationPair(br, a0, a1)
	s0, _, err := establishSessionPair(br, a0, a1, 1)
	if err != nil {
		t.Fatal(err)
	}
	flushBuffers(br, a0, a1)
	a1.SetAckCoalescing(100 * time.Millisecond)
	s0.SetReliabilityParams(true, ReliabilityTypeReliable, 0) // unordered: coalesced

	// Three 1,000-byte messages: three packets, within the initial congestion window.
	sacks, timeouts := a1.stats.getNumSACKsSent(), a1.stats.getNumAckTimeouts()
	packets := a1.stats.getNumPacketsReceived()
	for range 3 {
		if _, err := s0.WriteSCTP(make([]byte, 1000), PayloadTypeWebRTCBinary); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, br, "the burst to arrive", func() bool { return a1.stats.getNumPacketsReceived() >= packets+3 })
	waitFor(t, br, "the burst to be acknowledged", func() bool { return a0.BufferedAmount() == 0 })
	if got := a1.stats.getNumSACKsSent() - sacks; got != 1 {
		t.Errorf("%d SACKs for a burst of 3 packets, want 1", got)
	}
	if got := a1.stats.getNumAckTimeouts() - timeouts; got != 1 {
		t.Errorf("%d ack timeouts for the burst, want 1 (the shortened timer)", got)
	}

	// A gap: the first of three packets is lost; the second shows the gap and is
	// acknowledged at once, before the 100 ms window.
	sacks, timeouts = a1.stats.getNumSACKsSent(), a1.stats.getNumAckTimeouts()
	packets = a1.stats.getNumPacketsReceived()
	br.DropNextNWrites(0, 1)
	for range 3 {
		if _, err := s0.WriteSCTP(make([]byte, 1000), PayloadTypeWebRTCBinary); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, br, "the packets after the gap to arrive", func() bool { return a1.stats.getNumPacketsReceived() >= packets+2 })
	waitFor(t, br, "a SACK of the gap", func() bool { return a1.stats.getNumSACKsSent() > sacks })
	if got := a1.stats.getNumAckTimeouts() - timeouts; got != 0 {
		t.Errorf("the gap was acknowledged after %d ack timeouts, want at once", got)
	}
	waitFor(t, br, "the lost packet to be retransmitted and everything acknowledged", func() bool { return a0.BufferedAmount() == 0 })

	// Ordered DATA keeps a SACK every second packet: three packets, two SACKs (one after the
	// second packet, one from the delayed-ack timer).
	s0.SetReliabilityParams(false, ReliabilityTypeReliable, 0)
	sacks = a1.stats.getNumSACKsSent()
	packets = a1.stats.getNumPacketsReceived()
	for range 3 {
		if _, err := s0.WriteSCTP(make([]byte, 1000), PayloadTypeWebRTCBinary); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, br, "the ordered burst to arrive", func() bool { return a1.stats.getNumPacketsReceived() >= packets+3 })
	waitFor(t, br, "the ordered burst to be acknowledged", func() bool { return a0.BufferedAmount() == 0 })
	if got := a1.stats.getNumSACKsSent() - sacks; got != 2 {
		t.Errorf("%d SACKs for an ordered burst of 3 packets, want 2 (not coalesced)", got)
	}
}
