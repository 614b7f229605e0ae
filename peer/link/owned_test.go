package link

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
)

// TestSendOwnedToManyConns is the host's shape: one buffer of datagrams, sent owned (no copy per
// Conn) to every client on one shared socket. Each client receives exactly the bytes on both
// channels (the reliable message spans several SCTP chunks, which are sub-slices of the buffer),
// and the buffer is unchanged afterwards; the race detector watches pion's reads of it. The
// "copying" run sends the way a Conn does with stock pion/sctp (fastpath.go: no owned writes in
// it), which must keep the same contract.
func TestSendOwnedToManyConns(t *testing.T) {
	t.Run("owned", func(t *testing.T) {
		if !FastPaths() {
			t.Skip("stock pion/sctp (no replace of github.com/pion/sctp): no owned writes, the copying run covers it")
		}
		sendOwnedToManyConns(t, false)
	})
	t.Run("copying", func(t *testing.T) { sendOwnedToManyConns(t, true) })
}

func sendOwnedToManyConns(t *testing.T, copying bool) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	const clients, dgrams = 6, 40
	host := mustAPI(t, Config{Logger: testLogger(t)})
	defer host.Close()
	guests := mustAPI(t, Config{Logger: testLogger(t), DisableUDPMux: true})
	defer guests.Close()

	// The recording: dgrams datagrams of different sizes up to the limit, then one reliable
	// message of several chunks, all in one buffer.
	var buf []byte
	var spans [][2]int
	for i := range dgrams {
		n := 100 + i*97%(MaxUnreliableMessage-100)
		a := len(buf)
		buf = append(buf, pattern(uint32(i), n)...)
		spans = append(spans, [2]int{a, len(buf)})
	}
	a := len(buf)
	buf = append(buf, pattern(dgrams, 5000)...)
	spans = append(spans, [2]int{a, len(buf)})
	want := bytes.Clone(buf)

	var mu sync.Mutex
	got := make([][][]byte, clients) // per client, what arrived, in arrival order
	pairs := make([]*pair, clients)
	for i := range clients {
		pairs[i] = newPair(t, pairOpts{
			apiA: guests, apiB: host,
			handlerA: func(_ Channel, p []byte) {
				mu.Lock()
				got[i] = append(got[i], bytes.Clone(p))
				mu.Unlock()
			},
		})
		defer pairs[i].close()
	}
	for _, p := range pairs {
		p.waitReady(t)
		if copying {
			p.b.withoutFastPathsForTest()
		}
	}
	// Even clients get the datagrams one SendOwned each, odd ones in one SendOwnedBatch.
	var batch [][]byte
	for _, s := range spans[:dgrams] {
		batch = append(batch, buf[s[0]:s[1]:s[1]])
	}
	for i, p := range pairs {
		if i%2 == 1 {
			if err := p.b.SendOwnedBatch(Unreliable, batch); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, d := range batch {
				if err := p.b.SendOwned(Unreliable, d); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := spans[dgrams]
		if err := p.b.SendOwned(Reliable, buf[s[0]:s[1]:s[1]]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "every client's messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range clients {
			if len(got[i]) != len(spans) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for i := range clients {
		seen := make([]bool, len(spans))
		for _, m := range got[i] {
			k := -1
			for j, s := range spans {
				if !seen[j] && bytes.Equal(m, want[s[0]:s[1]]) {
					k = j
					break
				}
			}
			if k < 0 {
				t.Fatalf("client %d received %d bytes that were not sent (or twice)", i, len(m))
			}
			seen[k] = true
		}
		if s := pairs[i].b.Stats().Channels[Unreliable]; s.MessagesSent != dgrams || s.Dropped != 0 {
			t.Fatalf("client %d: unreliable stats %+v, want %d sent, none dropped", i, s, dgrams)
		}
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("the buffer handed over was written")
	}
}
