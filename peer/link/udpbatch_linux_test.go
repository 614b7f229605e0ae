package link

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// fakeBatchIO records what a batchConn sends, as the datagrams a receiver would see.
type fakeBatchIO struct {
	mu      sync.Mutex
	calls   int
	got     map[netip.AddrPort][][]byte
	gsoMsgs int
	// failGSO makes every message with a control message fail with EIO.
	failGSO bool
	// entered and release, when set, hold the first call until release is closed.
	entered, release chan struct{}
}

func (f *fakeBatchIO) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 && f.release != nil {
		close(f.entered)
		f.mu.Unlock()
		<-f.release
		f.mu.Lock()
	}
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

// Rule "batched UDP": a write that finds a send in progress queues and returns; the sender then
// sends the queue in sendmmsg calls of up to batchSize messages, same-size datagrams to one
// destination as one GSO message (the last may be shorter); datagrams leave in order per
// destination; a write that finds no send in progress leaves at once.
func TestBatchConnCombinesWrites(t *testing.T) {
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			f := &fakeBatchIO{entered: make(chan struct{}), release: make(chan struct{})}
			b := newBatchConn(nopPacketConn{}, f, gso)
			a := netip.MustParseAddrPort("127.0.0.1:1000")
			c := netip.MustParseAddrPort("127.0.0.1:2000")
			first := make(chan struct{})
			go func() {
				defer close(first)
				_, _ = b.WriteToAddrPort(seqDatagram(0, 1228), a) // sends, held in the syscall
			}()
			<-f.entered
			// 99 full datagrams to a, then 28 alternating a/c of another size: all queue.
			for i := 1; i < 100; i++ {
				_, _ = b.WriteToAddrPort(seqDatagram(i, 1228), a)
			}
			for i := range 28 {
				to, seq := a, 100+i/2
				if i%2 == 1 {
					to, seq = c, i/2
				}
				_, _ = b.WriteToAddrPort(seqDatagram(seq, 300), to)
			}
			if n := b.queuedLen(); n != 127 {
				t.Fatalf("%d datagrams queued behind the send in progress, want 127", n)
			}
			b.Flush() // a send is in progress: it sends them
			if n := b.queuedLen(); n != 127 {
				t.Fatalf("Flush during a send took %d datagrams, want it to leave them to the sender", 127-n)
			}
			close(f.release)
			<-first
			if n := b.queuedLen(); n != 0 {
				t.Fatalf("%d datagrams left queued after the send", n)
			}
			// Without contention every write is its own send.
			_, _ = b.WriteToAddrPort(seqDatagram(14, 90), c)
			_, _ = b.WriteToAddrPort(seqDatagram(114, 90), a)
			checkInOrder(t, f.got[a], 115, "to a")
			checkInOrder(t, f.got[c], 15, "to c")
			// 127 queued: without GSO 127 messages, two calls; with GSO the 99 full datagrams to a
			// and the first short one are two messages (53 × 1228 bytes is the most under 64 KiB,
			// then 46 and the short one), then 27 alternating: 29 messages, one call.
			wantCalls, wantGSO := map[bool]int{true: 4, false: 5}[gso], map[bool]int{true: 2, false: 0}[gso]
			if f.calls != wantCalls || f.gsoMsgs != wantGSO {
				t.Errorf("%d sendmmsg calls and %d GSO messages, want %d and %d", f.calls, f.gsoMsgs, wantCalls, wantGSO)
			}
			if st := b.stats(); st.Datagrams != 130 || st.Syscalls != uint64(wantCalls) {
				t.Errorf("stats %+v, want 130 datagrams in %d syscalls", st, wantCalls)
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
	b := newBatchConn(nopPacketConn{}, f, true)
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	// Queue ten behind a send in progress (the test holds sending), then send them.
	b.sending = true
	for i := range 10 {
		_, _ = b.WriteToAddrPort(seqDatagram(i, 500), a)
	}
	b.drain()
	checkInOrder(t, f.got[a], 10, "after the fallback")
	if b.gso.Load() {
		t.Error("GSO still on after the kernel refused it")
	}
	_, _ = b.WriteToAddrPort(seqDatagram(10, 500), a)
	_, _ = b.WriteToAddrPort(seqDatagram(11, 500), a)
	checkInOrder(t, f.got[a], 12, "later")
}

// Rule "batched UDP, real sockets": through the kernel (sendmmsg, GSO where it is available,
// recvmmsg on the receiving side), every datagram written by concurrent writers arrives, in order
// per destination.
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
	for k := range 2 {
		rc := batchSocket(listen())
		defer rc.Close()
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
	// One writer per destination, concurrently, so that sends combine.
	var writers sync.WaitGroup
	for k := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for j := range per {
				if _, err := b.WriteToAddrPort(seqDatagram(j, size), dests[k]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Wait()
	if n := b.queuedLen(); n != 0 {
		t.Fatalf("%d datagrams left queued after the writers returned", n)
	}
	wg.Wait()
	for k := range 2 {
		checkInOrder(t, got[k], per, fmt.Sprintf("destination %d", k))
	}
	st := b.stats()
	if st.Datagrams != 2*per || st.Syscalls > st.Datagrams {
		t.Errorf("stats %+v: want %d datagrams in at most as many syscalls", st, 2*per)
	}
	t.Logf("%+v", st)
}

// nopPacketConn stands for the socket under a fake batchIO.
type nopPacketConn struct{ net.PacketConn }

func (nopPacketConn) Close() error { return nil }
