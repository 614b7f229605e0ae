package bench

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

func TestWireLines(t *testing.T) {
	var rest strings.Builder
	l := &wireLines{rest: &rest}
	// Lines split anywhere across writes; a line that is not a count passes through.
	for _, chunk := range []string{"wire 1 2", " 3 4 0\nhello\nwi", "re 10 20 30 40 7\nwire x 1 2 3 4\n", "wire 5"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.counts(), (wireCounts{10, 20, 30, 40, 7}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if got, want := rest.String(), "hello\nwire x 1 2 3 4\n"; got != want {
		t.Fatalf("passed through %q, want %q", got, want)
	}
}

func TestWireCounterClasses(t *testing.T) {
	w := &wireCounter{}
	pkt := func(n int, first byte) []byte {
		b := make([]byte, n)
		b[0] = first
		return b
	}
	w.count(pkt(28+37, dtlsAppData))       // SACK or FORWARD TSN
	w.count(pkt(64, 0x01))                 // STUN binding success
	w.count(pkt(40+12+16+37, dtlsAppData)) // a 40-byte tail fragment
	w.count(pkt(1188+37, dtlsAppData))     // a full datagram
	if got, want := w.counts(), (wireCounts{packets: 4, bytes: 65 + 64 + 105 + 1225, control: 1, small: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

func TestProcCPU(t *testing.T) {
	d0, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until /proc shows at least two more ticks (bounded).
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for {
		for i := range 1 << 20 {
			x ^= i * 7
		}
		d1, err := procCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if d1-d0 >= 2*time.Second/clockTicks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %v after 5 s of work (%d)", d1, x)
		}
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU(-1) succeeded")
	}
}

// A batched socket's packets are counted one per GSO segment, and one per plain message; an OS
// socket is counted through the batchable wrapper.
func TestWireCounterBatch(t *testing.T) {
	w, err := newWireCounter()
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*countedBatchUDP); !ok {
		t.Fatalf("the counted OS socket is a %T, not batchable", c)
	}
	seg := make([]byte, 1225)
	seg[0] = dtlsAppData
	countBatched(w, ipv4.Message{Buffers: [][]byte{seg, seg, seg[:65]}, OOB: []byte{1}}) // GSO: 3 packets
	countBatched(w, ipv4.Message{Buffers: [][]byte{seg[:30], seg[:35]}})                 // one 65-byte packet
	if got, want := w.counts(), (wireCounts{packets: 4, bytes: 1225*2 + 65 + 65, control: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}
