package link

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
	"golang.org/x/net/ipv4"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// fakeBatchIO records what a batchConn sends, as the datagrams a receiver would see.
type fakeBatchIO struct {
	mu      sync.Mutex
	calls   int
	got     map[netip.AddrPort][][]byte
	gsoMsgs int
	// failGSO makes every message with a control message fail with EIO.
	failGSO bool
}

func (f *fakeBatchIO) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.got == nil {
		f.got = map[netip.AddrPort][][]byte{}
	}
	for i, m := range ms {
		if len(m.OOB) > 0 {
			if f.failGSO {
				if i == 0 {
					return 0, &net.OpError{Op: "sendmmsg", Err: syscall.EIO}
				}
				return i, nil
			}
			f.gsoMsgs++
		} else if len(m.Buffers) != 1 {
			return i, fmt.Errorf("message %d has %d buffers and no GSO control", i, len(m.Buffers))
		}
		to := m.Addr.(*net.UDPAddr).AddrPort()
		for _, b := range m.Buffers {
			f.got[to] = append(f.got[to], slices.Clone(b))
		}
	}
	return len(ms), nil
}

func (f *fakeBatchIO) ReadBatch([]ipv4.Message, int) (int, error) { return 0, net.ErrClosed }

// seqDatagram is datagram i for a destination: its sequence number, then size-4 bytes.
func seqDatagram(i, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

func checkInOrder(t *testing.T, got [][]byte, want int, what string) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("%s: %d datagrams, want %d", what, len(got), want)
	}
	for i, b := range got {
		if seq := binary.BigEndian.Uint32(b); seq != uint32(i) {
			t.Fatalf("%s: datagram %d has sequence %d", what, i, seq)
		}
	}
}

// Rule "batched UDP": datagrams leave in order per destination, a full batch is one sendmmsg,
// same-size datagrams to one destination are one GSO message (the last may be shorter), and
// nothing waits past Flush.
func TestBatchConnFlushAndGSO(t *testing.T) {
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			f := &fakeBatchIO{}
			b := newBatchConn(nopPacketConn{}, f, gso, false, false)
			a := netip.MustParseAddrPort("127.0.0.1:1000")
			c := netip.MustParseAddrPort("127.0.0.1:2000")
			// 100 full datagrams to a, then 28 alternating a/c of another size: 128 = two batches.
			for i := range 100 {
				_, _ = b.WriteToAddrPort(seqDatagram(i, 1228), a)
			}
			for i := range 28 {
				to, seq := a, 100+i/2
				if i%2 == 1 {
					to, seq = c, i/2
				}
				_, _ = b.WriteToAddrPort(seqDatagram(seq, 300), to)
			}
			if f.calls != 2 {
				t.Fatalf("%d sendmmsg calls for two full batches, want 2", f.calls)
			}
			// Fewer than a batch waits for Flush, then leaves in one call.
			_, _ = b.WriteToAddrPort(seqDatagram(14, 90), c)
			_, _ = b.WriteToAddrPort(seqDatagram(114, 90), a)
			if f.calls != 2 {
				t.Fatalf("a partial batch was sent before Flush")
			}
			b.Flush()
			if f.calls != 3 {
				t.Fatalf("%d sendmmsg calls after Flush, want 3", f.calls)
			}
			checkInOrder(t, f.got[a], 115, "to a")
			checkInOrder(t, f.got[c], 15, "to c")
			// With GSO: batch 1 = 64 full datagrams to a as two messages (53 × 1228 bytes is the
			// most under 64 KiB, then 11); batch 2 = 36 more to a and the first short one as one
			// message, then 27 alternating (no two consecutive to one destination).
			if want := map[bool]int{true: 3, false: 0}[gso]; f.gsoMsgs != want {
				t.Errorf("%d GSO messages, want %d", f.gsoMsgs, want)
			}
			st := b.stats()
			if st.Datagrams != 130 || st.Syscalls != 3 {
				t.Errorf("stats %+v, want 130 datagrams in 3 syscalls", st)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := b.WriteToAddrPort([]byte{1}, a); err == nil {
				t.Error("write after Close succeeded")
			}
		})
	}
}

// Rule "batched UDP, fallback": when the kernel refuses a GSO send, the datagrams go out one by
// one, in order, and GSO stays off.
func TestBatchConnGSOFallback(t *testing.T) {
	f := &fakeBatchIO{failGSO: true}
	b := newBatchConn(nopPacketConn{}, f, true, false, false)
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	for i := range 10 {
		_, _ = b.WriteToAddrPort(seqDatagram(i, 500), a)
	}
	b.Flush()
	checkInOrder(t, f.got[a], 10, "after the fallback")
	if b.gso.Load() {
		t.Error("GSO still on after the kernel refused it")
	}
	_, _ = b.WriteToAddrPort(seqDatagram(10, 500), a)
	_, _ = b.WriteToAddrPort(seqDatagram(11, 500), a)
	b.Flush()
	checkInOrder(t, f.got[a], 12, "later")
}

// Rule "batched UDP, real sockets": through the kernel (sendmmsg, GSO where it is available,
// recvmmsg on the receiving side, UDP_GRO trains where it is available), every datagram written
// arrives whole, in order per destination, without Flush (the flusher sends once the writers go
// quiet). Each burst ends with a shorter datagram, the short last segment of a GSO send and of
// a GRO train.
func TestBatchConnLoopback(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadBuffer(4 << 20)
		return c
	}
	raw := listen()
	b := batchSocket(raw)
	if b == nil {
		t.Fatal("a *net.UDPConn is not batched on Linux")
	}
	defer b.Close()
	t.Logf("GSO available: %v", b.gso.Load())
	const per, size = 300, 1100
	var wg sync.WaitGroup
	got := make([][][]byte, 2)
	dests := make([]netip.AddrPort, 2)
	rcs := make([]*batchConn, 2)
	sizeOf := func(j int) int {
		if j%20 == 19 {
			return size - 400
		}
		return size
	}
	for k := range 2 {
		rc := batchSocket(listen())
		defer rc.Close()
		rcs[k] = rc
		dests[k] = rc.LocalAddr().(*net.UDPAddr).AddrPort()
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for len(got[k]) < per {
				_ = rc.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, from, err := rc.ReadFromAddrPort(buf)
				if err != nil {
					return
				}
				if from.Port() != raw.LocalAddr().(*net.UDPAddr).AddrPort().Port() {
					continue
				}
				got[k] = append(got[k], slices.Clone(buf[:n]))
			}
		}()
	}
	// Bursts of 20 per destination, alternating, so that batches mix destinations and runs.
	for i := 0; i < per; i += 20 {
		for k := range 2 {
			for j := i; j < i+20; j++ {
				if _, err := b.WriteToAddrPort(seqDatagram(j, sizeOf(j)), dests[k]); err != nil {
					t.Fatal(err)
				}
			}
		}
		poll.Until(t, 10*time.Second, "the flusher sends the burst", func() error {
			if n := b.queuedLen(); n > 0 {
				return fmt.Errorf("%d queued", n)
			}
			return nil
		})
	}
	wg.Wait()
	for k := range 2 {
		checkInOrder(t, got[k], per, fmt.Sprintf("destination %d", k))
		for j, d := range got[k] {
			if len(d) != sizeOf(j) {
				t.Fatalf("destination %d: datagram %d has %d bytes, want %d", k, j, len(d), sizeOf(j))
			}
		}
		st := rcs[k].stats()
		t.Logf("receiver %d: GRO %v, %d reads returned %d messages, %d of them trains", k, rcs[k].gro, st.ReadSyscalls, st.ReadDatagrams, st.GROTrains)
		if rcs[k].gro && b.gso.Load() && st.GROTrains == 0 {
			t.Errorf("receiver %d has UDP_GRO and the sender GSO, yet no read returned a train", k)
		}
	}
	st := b.stats()
	if st.Datagrams != 2*per || st.Syscalls >= st.Datagrams {
		t.Errorf("stats %+v: want %d datagrams in fewer syscalls", st, 2*per)
	}
}

// nopPacketConn stands for the socket under a fake batchIO.
type nopPacketConn struct{ net.PacketConn }

func (nopPacketConn) Close() error { return nil }

// nopBatchIO accepts every message.
type nopBatchIO struct{}

func (nopBatchIO) WriteBatch(ms []ipv4.Message, _ int) (int, error) { return len(ms), nil }
func (nopBatchIO) ReadBatch([]ipv4.Message, int) (int, error)       { return 0, net.ErrClosed }

// Writes and flushes allocate nothing once the batch buffers have grown.
func TestBatchConnAllocs(t *testing.T) {
	b := newBatchConn(nopPacketConn{}, nopBatchIO{}, true, false, false)
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	c := netip.MustParseAddrPort("127.0.0.1:2000")
	d := make([]byte, 1228)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 40 {
			to := a
			if i%8 == 7 {
				to = c
			}
			_, _ = b.WriteToAddrPort(d[:1228-i%3], to)
		}
		b.Flush()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per 40 writes and a flush, want 0", allocs)
	}
}

// Rule "batched UDP, through pion": on a real pair of Conns the shared sockets are batched, a
// burst of datagrams arrives, its packets leave in fewer sendmmsg calls than packets, and
// closing the APIs ends the flushers (no goroutine left).
func TestBatchedSocketUnderPion(t *testing.T) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()
	var got atomic.Int64
	p := newPair(t, pairOpts{cfgA: Config{Logger: testLogger(t)}, cfgB: Config{Logger: testLogger(t)},
		handlerB: func(ch Channel, _ []byte) {
			if ch == Unreliable {
				got.Add(1)
			}
		}})
	defer p.close()
	p.waitReady(t)
	if _, ok := p.apiA.BatchStats(); !ok {
		t.Fatal("the shared socket is not batched on Linux")
	}
	before, _ := p.apiA.BatchStats()
	msg := make([]byte, 1000)
	const bursts, per = 5, 40
	burst := func() {
		for range per {
			if err := p.a.Send(Unreliable, msg); err != nil {
				t.Fatal(err)
			}
		}
		p.apiA.Flush()
	}
	for range bursts {
		// Unreliable datagrams may be lost (maxRetransmits 0; under a loaded race-detector run of the
		// whole suite a burst can be dropped whole): most of a burst must arrive, and a burst that
		// does not is sent again, each second, until one does or 20 s have passed.
		want := got.Load() + per*9/10
		burst()
		deadline, resend := time.Now().Add(20*time.Second), time.Now().Add(time.Second)
		for got.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("no burst of %d unreliable datagrams arrived in 20 s (%d received)", per, got.Load())
			}
			if time.Now().After(resend) {
				burst()
				resend = time.Now().Add(time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Every datagram leaves A (what may be lost is on the way): wait for the last ones to go out.
	waitFor(t, 20*time.Second, "every datagram sent", func() bool {
		p.apiA.Flush()
		s, _ := p.apiA.BatchStats()
		return s.Datagrams-before.Datagrams >= bursts*per
	})
	after, _ := p.apiA.BatchStats()
	sent, calls := after.Datagrams-before.Datagrams, after.Syscalls-before.Syscalls
	t.Logf("%d datagrams in %d sendmmsg calls (%d GSO sends); B read %d in %d recvmmsg calls", sent, calls,
		after.GSOSends-before.GSOSends, func() uint64 { s, _ := p.apiB.BatchStats(); return s.ReadDatagrams }(),
		func() uint64 { s, _ := p.apiB.BatchStats(); return s.ReadSyscalls }())
	if sent < bursts*per || calls >= sent {
		t.Errorf("%d datagrams in %d sendmmsg calls: want ≥ %d datagrams in fewer calls", sent, calls, bursts*per)
	}
}
