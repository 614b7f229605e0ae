package link

import (
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
)

// TestZeroChecksumNegotiated: two Conns both accept packets without SCTP's CRC32c (RFC 9653), so
// each sends the other none: DTLS already protects every packet.
func TestZeroChecksumNegotiated(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)}})
	defer p.close()
	p.waitReady(t)
	for name, c := range map[string]*Conn{"offerer": p.a, "answerer": p.b} {
		md, ok := c.pc.SCTP().Metadata()
		if !ok {
			t.Fatalf("%s: no SCTP association", name)
		}
		if !md.ZeroChecksumSendingEnabled || !md.ZeroChecksumReceivingEnabled {
			t.Fatalf("%s: zero checksum sending %v, receiving %v; want both", name, md.ZeroChecksumSendingEnabled, md.ZeroChecksumReceivingEnabled)
		}
	}
}
