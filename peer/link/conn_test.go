package link

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/sctp"
	"github.com/pion/transport/v5/test"
	"github.com/pion/webrtc/v4"
)

// pattern fills a payload whose bytes depend on seq, so corruption or mixing
// of messages is detected.
func pattern(seq uint32, n int) []byte {
	b := make([]byte, n)
	if n >= 4 {
		binary.LittleEndian.PutUint32(b, seq)
	}
	for i := 4; i < n; i++ {
		b[i] = byte(seq) ^ byte(i*7)
	}
	return b
}

func TestConnLoopback(t *testing.T) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	var echo connRef
	var mu sync.Mutex // guards the following
	var gotReliable []uint32
	var gotBig [][]byte
	var unreliableOK, unreliableBad atomic.Int64

	handlerA := func(ch Channel, p []byte) {
		if ch != Reliable {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(p) > 1000 {
			gotBig = append(gotBig, bytes.Clone(p))
			return
		}
		gotReliable = append(gotReliable, binary.LittleEndian.Uint32(p))
	}
	handlerB := func(ch Channel, p []byte) {
		switch ch {
		case Reliable:
			if err := echo.get().Send(Reliable, p); err != nil {
				t.Errorf("echo: %v", err)
			}
		case Unreliable:
			seq := binary.LittleEndian.Uint32(p)
			if len(p) == 1200 && bytes.Equal(p, pattern(seq, 1200)) {
				unreliableOK.Add(1)
			} else {
				unreliableBad.Add(1)
			}
		}
	}
	// a uses the shared UDP mux, b its own ephemeral socket.
	p := newPair(t, pairOpts{
		cfgA:     Config{Logger: testLogger(t)},
		cfgB:     Config{Logger: testLogger(t), DisableUDPMux: true},
		handlerA: handlerA,
		handlerB: handlerB,
		logger:   testLogger(t),
	})
	defer p.close()
	echo.p.Store(p.b)
	p.waitReady(t)

	t.Run("candidates are loopback", func(t *testing.T) {
		if addr, ok := p.apiA.UDPMuxAddr().(*net.UDPAddr); !ok || !addr.IP.IsLoopback() {
			t.Fatalf("UDP mux address %v is not loopback", p.apiA.UDPMuxAddr())
		}
		if p.apiB.UDPMuxAddr() != nil {
			t.Fatalf("b has a UDP mux at %v although it is disabled", p.apiB.UDPMuxAddr())
		}
		for side := range 2 {
			n := 0
			for _, s := range p.signals(side) {
				var lines []string
				if s.Candidate != nil {
					lines = []string{s.Candidate.Candidate}
				}
				for line := range strings.SplitSeq(s.SDP, "\r\n") {
					if strings.HasPrefix(line, "a=candidate:") {
						lines = append(lines, line)
					}
				}
				for _, line := range lines {
					// candidate:<foundation> <component> <proto> <prio> <addr> <port> typ …
					f := strings.Fields(line)
					if len(f) < 8 || f[2] != "udp" || !net.ParseIP(f[4]).IsLoopback() {
						t.Errorf("side %d signaled a non-loopback or non-UDP candidate: %q", side, line)
					}
					n++
				}
			}
			if n == 0 {
				t.Errorf("side %d signaled no candidate", side)
			}
		}
	})

	t.Run("channel parameters", func(t *testing.T) {
		for _, c := range []*Conn{p.a, p.b} {
			for _, tc := range []struct {
				ch          Channel
				ordered     bool
				retransmits *uint16
				mode        streamMode
				chanType    datachannel.ChannelType
			}{
				{Reliable, true, nil, streamMode{false, sctp.ReliabilityTypeReliable, 0}, datachannel.ChannelTypeReliable},
				{Unreliable, false, new(uint16), streamMode{true, sctp.ReliabilityTypeRexmit, 0}, datachannel.ChannelTypePartialReliableRexmitUnordered},
			} {
				dc := c.dataChannelForTest(tc.ch)
				if !dc.Negotiated() || dc.ID() == nil || *dc.ID() != uint16(tc.ch) {
					t.Errorf("%s %s: negotiated=%t id=%v, want negotiated id %d", c.role, tc.ch, dc.Negotiated(), dc.ID(), tc.ch)
				}
				if dc.Ordered() != tc.ordered {
					t.Errorf("%s %s: Ordered()=%t", c.role, tc.ch, dc.Ordered())
				}
				if got := dc.MaxRetransmits(); (got == nil) != (tc.retransmits == nil) || (got != nil && *got != *tc.retransmits) {
					t.Errorf("%s %s: MaxRetransmits()=%v, want %v", c.role, tc.ch, got, tc.retransmits)
				}
				if d := c.detachedForTest(tc.ch); d.ChannelType != tc.chanType || d.ReliabilityParameter != 0 {
					t.Errorf("%s %s: pion config %v/%d, want %v/0", c.role, tc.ch, d.ChannelType, d.ReliabilityParameter, tc.chanType)
				}
				// What the SCTP stream really does (pion does not apply it for
				// negotiated channels; see pionfix.go).
				mode, err := c.streamModeForTest(tc.ch)
				if err != nil || mode != tc.mode {
					t.Errorf("%s %s: SCTP stream mode %+v (%v), want %+v", c.role, tc.ch, mode, err, tc.mode)
				}
			}
		}
	})

	t.Run("reliable echo of 1000 in order", func(t *testing.T) {
		const n = 1000
		for i := range uint32(n) {
			if err := p.a.Send(Reliable, pattern(i, 64)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		waitFor(t, 10*time.Second, "1000 echoes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(gotReliable) >= n
		})
		mu.Lock()
		defer mu.Unlock()
		for i, seq := range gotReliable {
			if seq != uint32(i) {
				t.Fatalf("echo %d carries seq %d: reliable channel reordered", i, seq)
			}
		}
		if len(gotReliable) != n {
			t.Fatalf("got %d echoes, want %d", len(gotReliable), n)
		}
	})

	t.Run("16 KiB and max-size reliable messages", func(t *testing.T) {
		want := [][]byte{pattern(1, 16*1024), pattern(2, MaxReliableMessage)}
		for _, m := range want {
			if err := p.a.Send(Reliable, m); err != nil {
				t.Fatalf("send %d bytes: %v", len(m), err)
			}
		}
		waitFor(t, 10*time.Second, "big echoes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(gotBig) >= len(want)
		})
		mu.Lock()
		defer mu.Unlock()
		for i := range want {
			if !bytes.Equal(gotBig[i], want[i]) {
				t.Fatalf("big message %d (%d bytes) came back as %d different bytes", i, len(want[i]), len(gotBig[i]))
			}
		}
		if err := p.a.Send(Reliable, make([]byte, MaxReliableMessage+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("oversized send: %v, want ErrTooLarge", err)
		}
	})

	t.Run("unreliable 1200-byte datagrams arrive", func(t *testing.T) {
		const n = 200
		for i := range uint32(n) {
			// Pace below the drop threshold: this checks delivery, not drops.
			waitFor(t, 5*time.Second, "send buffer to drain", func() bool {
				return p.a.Stats().Channels[Unreliable].Buffered < DefaultUnreliableDropThreshold/2
			})
			if err := p.a.Send(Unreliable, pattern(i, 1200)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		waitFor(t, 10*time.Second, "datagrams", func() bool { return unreliableOK.Load() == n })
		if bad := unreliableBad.Load(); bad != 0 {
			t.Fatalf("%d corrupted datagrams", bad)
		}
		sa, sb := p.a.Stats().Channels[Unreliable], p.b.Stats().Channels[Unreliable]
		if sa.MessagesSent != n || sa.BytesSent != n*1200 || sa.Dropped != 0 || sb.MessagesReceived != n || sb.BytesReceived != n*1200 {
			t.Fatalf("stats: sender %+v, receiver %+v", sa, sb)
		}
	})
}

func TestConnChromiumLikeNoRemoteCandidates(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	for _, tc := range []struct {
		name string
		opts pairOpts
	}{
		{"offerer signals no candidates", pairOpts{chromiumLike: true}},
		{"candidates before the offer", pairOpts{candidatesFirst: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.cfgA.Logger, tc.opts.cfgB.Logger = testLogger(t), testLogger(t)
			got := make(chan []byte, 1)
			tc.opts.handlerB = func(_ Channel, p []byte) {
				select {
				case got <- bytes.Clone(p):
				default:
				}
			}
			p := newPair(t, tc.opts)
			defer p.close()
			p.waitReady(t)
			if err := p.a.Send(Reliable, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				if string(m) != "hello" {
					t.Fatalf("got %q", m)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("message not delivered")
			}
		})
	}
}

func TestConnCloseIdempotentAndRemoteDone(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)}})
	defer p.close()
	p.waitReady(t)
	if p.a.Err() != nil || p.b.Err() != nil {
		t.Fatalf("live conns report errors: %v, %v", p.a.Err(), p.b.Err())
	}

	for range 3 {
		if err := p.b.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	select {
	case <-p.b.Done():
	default:
		t.Fatal("Done not closed after Close returned")
	}
	if !errors.Is(p.b.Err(), ErrClosed) {
		t.Fatalf("closed side Err = %v, want ErrClosed", p.b.Err())
	}
	if err := p.b.Send(Reliable, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}

	select {
	case <-p.a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("remote side's Done did not fire after Close")
	}
	if err := p.a.Err(); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("remote side Err = %v, want ErrPeerClosed", err)
	}
	if err := p.a.Send(Unreliable, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send on a dead conn = %v, want ErrClosed", err)
	}
	if err := p.a.HandleSignal(Signal{Kind: SignalAnswer, SDP: "v=0"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("HandleSignal on a dead conn = %v, want ErrClosed", err)
	}
}

// blockingHandler blocks the receiver's read loop on every message until
// released, so the sender's buffer fills.
type blockingHandler struct {
	release chan struct{}
	once    sync.Once
}

func (h *blockingHandler) handle(Channel, []byte) { <-h.release }
func (h *blockingHandler) open()                  { h.once.Do(func() { close(h.release) }) }

func TestConnBackpressure(t *testing.T) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	const tries = 20000 // bound: 24 MB, far over the receive window plus thresholds
	msg := pattern(7, 1200)

	const (
		plain = iota
		owned
		batched // SendOwnedBatch of 16 datagrams a call
	)
	// copying: the Conn sends as it does with stock pion/sctp (no owned writes, fastpath.go).
	unreliable := func(mode int, copying bool) func(t *testing.T) {
		return func(t *testing.T) {
			h := &blockingHandler{release: make(chan struct{})}
			p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)}, handlerB: h.handle})
			defer p.close()
			defer h.open() // Runs before p.close, so the blocked reader can exit.
			p.waitReady(t)
			if copying {
				p.a.withoutFastPathsForTest()
			}
			send, per := p.a.Send, 1
			switch mode {
			case owned:
				send = p.a.SendOwned // the same rules; msg is never written
			case batched:
				batch := slices.Repeat([][]byte{msg}, 16)
				send, per = func(ch Channel, _ []byte) error { return p.a.SendOwnedBatch(ch, batch) }, len(batch)
			}
			var maxBuffered uint64
			for range tries / per {
				if err := send(Unreliable, msg); err != nil {
					t.Fatalf("unreliable send: %v", err)
				}
				maxBuffered = max(maxBuffered, p.a.Stats().Channels[Unreliable].Buffered)
			}
			s := p.a.Stats().Channels[Unreliable]
			if s.Dropped == 0 || s.MessagesSent+s.Dropped != tries {
				t.Fatalf("sent %d + dropped %d, want some drops and a total of %d", s.MessagesSent, s.Dropped, tries)
			}
			if limit := uint64(DefaultUnreliableDropThreshold + MaxUnreliableMessage); maxBuffered > limit { // a batch too: each datagram is checked
				t.Fatalf("buffered amount reached %d, over the threshold plus one message (%d)", maxBuffered, limit)
			}
			t.Logf("receiver blocked: %d sent, %d dropped, max buffered %d", s.MessagesSent, s.Dropped, maxBuffered)
		}
	}
	t.Run("unreliable drops are counted", unreliable(plain, false))
	t.Run("unreliable owned drops are counted", unreliable(owned, false))
	t.Run("unreliable batched drops are counted", unreliable(batched, false))
	t.Run("unreliable owned drops are counted, copying", unreliable(owned, true))
	t.Run("unreliable batched drops are counted, copying", unreliable(batched, true))

	t.Run("reliable returns ErrBackpressure", func(t *testing.T) {
		h := &blockingHandler{release: make(chan struct{})}
		p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)}, handlerB: h.handle})
		defer p.close()
		defer h.open()
		p.waitReady(t)
		var err error
		sent := 0
		for ; sent < tries && err == nil; sent++ {
			err = p.a.Send(Reliable, msg)
		}
		var bp *BackpressureError
		if !errors.Is(err, ErrBackpressure) || !errors.As(err, &bp) || bp.Channel != Reliable ||
			bp.Limit != DefaultReliableHighWater || bp.Buffered <= bp.Limit {
			t.Fatalf("after %d sends: err = %v, want a *BackpressureError over %d", sent, err, DefaultReliableHighWater)
		}
		if s := p.a.Stats().Channels[Reliable]; s.Backpressured != 1 || s.MessagesSent != uint64(sent-1) {
			t.Fatalf("stats %+v after %d sends", s, sent)
		}
		t.Logf("ErrBackpressure after %d reliable sends: %v", sent, err)
	})
}

func TestConnOversizeReceiveEndsLink(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)}})
	defer p.close()
	p.waitReady(t)
	// Send refuses this; the raw channel does not, like a misbehaving peer.
	if err := p.a.rawWriteForTest(Unreliable, make([]byte, MaxUnreliableMessage+1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("receiver survived an oversized message")
	}
	if !errors.Is(p.b.Err(), ErrTooLarge) {
		t.Fatalf("Err = %v, want ErrTooLarge", p.b.Err())
	}
	if n := p.b.Stats().Channels[Unreliable].Oversize; n != 1 {
		t.Fatalf("Oversize = %d, want 1", n)
	}
}

func TestConnSignalErrors(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	api := mustAPI(t, Config{Logger: testLogger(t)})
	defer api.Close()
	discard := func(Signal) error { return nil }
	ans, err := api.NewAnswerer(ConnConfig{Signal: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Close()
	off, err := api.NewOfferer(ConnConfig{Signal: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()

	for _, tc := range []struct {
		name string
		c    *Conn
		s    Signal
	}{
		{"unknown kind", ans, Signal{Kind: "bye"}},
		{"answer to an answerer", ans, Signal{Kind: SignalAnswer, SDP: "v=0"}},
		{"offer to an offerer", off, Signal{Kind: SignalOffer, SDP: "v=0"}},
		{"offer without SDP", ans, Signal{Kind: SignalOffer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.HandleSignal(tc.s); !errors.Is(err, ErrBadSignal) {
				t.Fatalf("HandleSignal = %v, want ErrBadSignal", err)
			}
			if tc.c.Err() != nil {
				t.Fatalf("a bad signal killed the conn: %v", tc.c.Err())
			}
		})
	}

	t.Run("end-of-candidates is ignored", func(t *testing.T) {
		if err := ans.HandleSignal(Signal{Kind: SignalCandidate}); err != nil {
			t.Fatalf("HandleSignal(nil candidate) = %v", err)
		}
	})

	t.Run("too many early candidates", func(t *testing.T) {
		cand := Signal{Kind: SignalCandidate, Candidate: &webrtc.ICECandidateInit{Candidate: "candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host"}}
		var err error
		for i := 0; i <= maxPendingCandidates && err == nil; i++ {
			err = ans.HandleSignal(cand)
		}
		if !errors.Is(err, ErrBadSignal) {
			t.Fatalf("got %v, want ErrBadSignal after %d queued candidates", err, maxPendingCandidates)
		}
	})

	t.Run("send before ready", func(t *testing.T) {
		if err := off.Send(Reliable, []byte("x")); !errors.Is(err, ErrNotReady) {
			t.Fatalf("Send = %v, want ErrNotReady", err)
		}
		if err := off.Send(Channel(2), nil); !errors.Is(err, ErrBadChannel) {
			t.Fatalf("Send on channel 2 = %v, want ErrBadChannel", err)
		}
		if err := off.Send(Unreliable, make([]byte, MaxUnreliableMessage+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("oversized Send = %v, want ErrTooLarge", err)
		}
	})

	t.Run("garbage offer kills the conn", func(t *testing.T) {
		c, err := api.NewAnswerer(ConnConfig{Signal: discard})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.HandleSignal(Signal{Kind: SignalOffer, SDP: "not sdp"}); !errors.Is(err, ErrNegotiation) {
			t.Fatalf("HandleSignal = %v, want ErrNegotiation", err)
		}
		<-c.Done()
	})

	t.Run("failing Signal kills the conn", func(t *testing.T) {
		boom := errors.New("signaling down")
		c, err := api.NewOfferer(ConnConfig{Signal: func(Signal) error { return boom }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("conn survived a failing Signal")
		}
		if !errors.Is(c.Err(), ErrSignalFailed) || !errors.Is(c.Err(), boom) {
			t.Fatalf("Err = %v, want ErrSignalFailed wrapping the cause", c.Err())
		}
	})
}

func TestNewAPIConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"non-loopback mux", Config{UDPMuxAddr: "192.0.2.1:0"}},
		{"wildcard mux on loopback-only", Config{UDPMuxAddr: "0.0.0.0:0"}},
		{"non-loopback public IP on loopback-only", Config{PublicIP: "192.0.2.1"}},
		{"public IP not IPv4", Config{PublicIP: "nope"}},
		{"unparsable mux", Config{UDPMuxAddr: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if api, err := NewAPI(tc.cfg); !errors.Is(err, ErrConfig) {
				if api != nil {
					_ = api.Close()
				}
				t.Fatalf("NewAPI = %v, want ErrConfig", err)
			}
		})
	}
	t.Run("nil Signal", func(t *testing.T) {
		api := mustAPI(t, Config{})
		defer api.Close()
		if _, err := api.NewOfferer(ConnConfig{}); !errors.Is(err, ErrConfig) {
			t.Fatalf("NewOfferer = %v, want ErrConfig", err)
		}
	})
}

// TestConnManyClientsOnOneMux is the server shape: many Conns on one shared
// UDP socket, each client from its own socket. Every message must reach the
// Conn of its own client. (Two live Conns between the same two muxed sockets
// are not supported: pion's UDPMuxDefault routes non-STUN packets by remote
// address only.)
func TestConnManyClientsOnOneMux(t *testing.T) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	const clients = 4
	host := mustAPI(t, Config{Logger: testLogger(t)})
	defer host.Close()
	guests := mustAPI(t, Config{Logger: testLogger(t), DisableUDPMux: true})
	defer guests.Close()

	var wrong atomic.Int64
	var got [clients][NumChannels]atomic.Int64
	pairs := make([]*pair, clients)
	for i := range clients {
		pairs[i] = newPair(t, pairOpts{
			apiA: guests, apiB: host,
			handlerB: func(ch Channel, p []byte) {
				if len(p) != 1 || int(p[0]) != i {
					wrong.Add(1)
				}
				got[i][ch].Add(1)
			},
		})
		defer pairs[i].close()
	}
	for _, p := range pairs {
		p.waitReady(t)
	}
	const perChannel = 50
	for range perChannel {
		for i, p := range pairs {
			for ch := range Channel(NumChannels) {
				if err := p.a.Send(ch, []byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	waitFor(t, 10*time.Second, "every client's messages", func() bool {
		for i := range clients {
			if got[i][Reliable].Load() != perChannel || got[i][Unreliable].Load() != perChannel {
				return false
			}
		}
		return true
	})
	if n := wrong.Load(); n != 0 {
		t.Fatalf("%d messages reached the wrong Conn", n)
	}
}
