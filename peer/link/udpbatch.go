package link

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/net/ipv4"
)

// Batched UDP for the shared ICE socket: datagrams written by pion's goroutines (every
// association's SCTP write loop, through DTLS and the UDP mux) are queued and leave in one
// sendmmsg, consecutive same-size datagrams to one destination as one UDP GSO send
// (UDP_SEGMENT) where the kernel supports it. Reads take up to batchSize datagrams per recvmmsg;
// where the kernel has UDP_GRO, a read may return a train of same-size datagrams from one sender
// (a GSO send arrives whole instead of cut into datagrams by the kernel), which ReadFrom hands out
// one datagram at a time.
//
// When a queued datagram leaves: when the batch fills (the writer that fills it flushes), when
// API.Flush is called (the peer loop, after its network flush), or when the flusher goroutine,
// woken by the first datagram of a batch, sees the writers go quiet — it yields the processor
// until the queue stops growing (at most maxYields times) and then flushes. A datagram is never
// held for a timer: outside a burst (a SACK, a retransmission, a keepalive) it leaves after a few
// scheduler yields.

const (
	// batchSize is the most datagrams per sendmmsg and per recvmmsg.
	batchSize = 64
	// maxGSOSegments is the kernel's UDP_MAX_SEGMENTS; a GSO send also stays ≤ 64 KiB.
	maxGSOSegments = 64
	maxGSOBytes    = 65507
	// maxYields bounds how long the flusher waits for more writes before it flushes.
	maxYields = 4
	// batchReadBuf is the buffer of each batched read (pion's UDP mux reads into 8 KiB too).
	batchReadBuf = 8192
	// With UDP_GRO a read returns up to 64 KiB; groReadBatch such buffers take the same memory
	// as batchSize plain ones.
	groReadBuf   = 65536
	groReadBatch = batchSize * batchReadBuf / groReadBuf
	// readOOBLen holds a UDP_GRO control message (an int).
	readOOBLen = 64
	// maxAddrCache bounds batchConn.addrs (destinations seen); it starts over when full.
	maxAddrCache = 4096
)

// batchIO is the batched side of a UDP socket: golang.org/x/net's ipv4.PacketConn.
type batchIO interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// BatchStats counts what a batched socket wrote.
type BatchStats struct {
	// Datagrams handed to the socket, Syscalls the sendmmsg calls that sent them, and
	// GSOSends the messages among them that carried several datagrams as GSO segments.
	Datagrams, Syscalls, GSOSends uint64
	// ReadSyscalls and ReadDatagrams count recvmmsg calls and what they returned.
	ReadSyscalls, ReadDatagrams uint64
	// GROTrains counts reads that returned several datagrams as one train (UDP_GRO).
	GROTrains uint64
}

// queued is one datagram waiting in a batch: its bytes are arena[off:off+n].
type queued struct {
	off, n int
	to     netip.AddrPort
}

// wbatch is a batch of queued datagrams with its own copy of their bytes.
type wbatch struct {
	arena []byte
	q     []queued
}

// batchConn is a net.PacketConn whose writes are batched (see above). Safe for concurrent use.
type batchConn struct {
	net.PacketConn
	io batchIO

	mu      sync.Mutex
	cur     *wbatch
	spare   *wbatch
	pending bool // the flusher has been woken for cur

	flushMu sync.Mutex // one flush at a time, so datagrams leave in the order they came
	msgs    []ipv4.Message
	oob     [][]byte
	bufs    [][]byte // every message's Buffers, one slab reused across flushes
	addrs   map[netip.AddrPort]*net.UDPAddr
	gso     atomic.Bool

	rmu   sync.Mutex
	rmsgs []ipv4.Message
	rn, r int  // rmsgs[r:rn] are read and not yet returned
	rseg  int  // bytes of rmsgs[r] already returned (a GRO train's datagrams before)
	gro   bool // UDP_GRO is on: reads may return trains (see the top of this file)

	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
	once    sync.Once

	datagrams, syscalls, gsoSends, readSyscalls, readDatagrams, groTrains atomic.Uint64
}

// newBatchConn batches writes to c through bio; gso says whether to try UDP GSO, gro whether c
// has UDP_GRO on. Without auto (tests), only a full batch, Flush and Close send.
func newBatchConn(c net.PacketConn, bio batchIO, gso, gro, auto bool) *batchConn {
	b := &batchConn{
		PacketConn: c, io: bio,
		cur: &wbatch{}, spare: &wbatch{},
		addrs: make(map[netip.AddrPort]*net.UDPAddr),
		wake:  make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{}),
	}
	b.gso.Store(gso)
	b.gro = gro
	n, size := batchSize, batchReadBuf
	if gro {
		n, size = groReadBatch, groReadBuf
	}
	b.rmsgs = make([]ipv4.Message, n)
	for i := range b.rmsgs {
		b.rmsgs[i].Buffers = [][]byte{make([]byte, size)}
		if gro {
			b.rmsgs[i].OOB = make([]byte, readOOBLen)
		}
	}
	if auto {
		go b.flusher()
	} else {
		close(b.done)
	}
	return b
}

// WriteTo queues p for addr, which must be a *net.UDPAddr.
func (b *batchConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: errors.New("not a UDP address")}
	}
	return b.WriteToAddrPort(p, ua.AddrPort())
}

// WriteToAddrPort queues p for addr (pion's UDP mux writes through it without allocating).
func (b *batchConn) WriteToAddrPort(p []byte, addr netip.AddrPort) (int, error) {
	b.mu.Lock()
	select {
	case <-b.closing:
		b.mu.Unlock()
		return 0, net.ErrClosed
	default:
	}
	wb := b.cur
	wb.q = append(wb.q, queued{off: len(wb.arena), n: len(p), to: addr})
	wb.arena = append(wb.arena, p...)
	full := len(wb.q) >= batchSize
	wake := !b.pending && !full
	if wake {
		b.pending = true
	}
	b.mu.Unlock()
	if full {
		b.Flush()
	} else if wake {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Flush sends every queued datagram now.
func (b *batchConn) Flush() {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	wb := b.cur
	b.cur, b.spare = b.spare, wb
	b.pending = false
	b.mu.Unlock()
	if len(wb.q) > 0 {
		b.send(wb)
	}
	wb.q, wb.arena = wb.q[:0], wb.arena[:0]
}

// queuedLen is how many datagrams wait.
func (b *batchConn) queuedLen() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.cur.q)
}

// flusher flushes a batch once its writers go quiet (see the top of this file).
func (b *batchConn) flusher() {
	defer close(b.done)
	for {
		select {
		case <-b.closing:
			return
		case <-b.wake:
		}
		n := b.queuedLen()
		for range maxYields {
			runtime.Gosched()
			m := b.queuedLen()
			if m == n {
				break
			}
			n = m
		}
		b.Flush()
	}
}

// send writes wb's datagrams. Called with flushMu held.
func (b *batchConn) send(wb *wbatch) {
	msgs, nOOB, bufs := b.msgs[:0], 0, b.bufs[:0]
	gso := b.gso.Load()
	for i := 0; i < len(wb.q); {
		first := wb.q[i]
		j := i + 1
		if gso {
			// Same destination, same size; the last segment may be shorter.
			total := first.n
			for j < len(wb.q) && j-i < maxGSOSegments && wb.q[j].to == first.to && wb.q[j].n <= first.n &&
				total+wb.q[j].n <= maxGSOBytes {
				total += wb.q[j].n
				short := wb.q[j].n < first.n
				j++
				if short {
					break
				}
			}
		}
		var m ipv4.Message
		m.Addr = b.udpAddr(first.to)
		start := len(bufs)
		for k := i; k < j; k++ {
			bufs = append(bufs, wb.arena[wb.q[k].off:wb.q[k].off+wb.q[k].n])
		}
		m.Buffers = bufs[start:len(bufs):len(bufs)]
		if j-i > 1 {
			if nOOB == len(b.oob) {
				b.oob = append(b.oob, make([]byte, 0, gsoControlLen))
			}
			m.OOB = appendGSOControl(b.oob[nOOB][:0], uint16(first.n))
			nOOB++
			b.gsoSends.Add(1)
		}
		msgs = append(msgs, m)
		i = j
	}
	b.msgs, b.bufs = msgs, bufs
	b.datagrams.Add(uint64(len(wb.q)))
	for len(msgs) > 0 {
		n, err := b.io.WriteBatch(msgs, 0)
		b.syscalls.Add(1)
		if err != nil {
			if len(msgs[0].OOB) > 0 && gsoUnsupported(err) {
				// The kernel or the route cannot segment: send these one by one from now on.
				b.gso.Store(false)
				b.sendPlain(msgs)
				break
			}
			// UDP: a datagram that cannot leave is lost, like a failed sendto.
			n = 1
		}
		msgs = msgs[n:]
	}
	// Do not keep the batch's bytes and addresses reachable through old messages.
	clear(b.msgs)
	clear(b.bufs)
}

// sendPlain sends msgs' datagrams one datagram per message (after GSO failed).
func (b *batchConn) sendPlain(msgs []ipv4.Message) {
	var plain []ipv4.Message
	for _, m := range msgs {
		for _, buf := range m.Buffers {
			plain = append(plain, ipv4.Message{Buffers: [][]byte{buf}, Addr: m.Addr})
		}
	}
	for len(plain) > 0 {
		n, err := b.io.WriteBatch(plain, 0)
		b.syscalls.Add(1)
		if err != nil {
			n = 1
		}
		plain = plain[n:]
	}
}

// udpAddr returns a *net.UDPAddr for ap, kept so that a flush does not allocate one per message.
func (b *batchConn) udpAddr(ap netip.AddrPort) *net.UDPAddr {
	if a := b.addrs[ap]; a != nil {
		return a
	}
	if len(b.addrs) >= maxAddrCache {
		clear(b.addrs)
	}
	a := net.UDPAddrFromAddrPort(ap)
	b.addrs[ap] = a
	return a
}

// ReadFrom returns the next datagram, reading up to batchSize at once.
func (b *batchConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, ap, err := b.ReadFromAddrPort(p)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(ap), nil
}

// ReadFromAddrPort is ReadFrom for pion's UDP mux. A datagram longer than p is truncated, as
// a UDP read would.
func (b *batchConn) ReadFromAddrPort(p []byte) (int, netip.AddrPort, error) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if b.r >= b.rn {
		n, err := b.io.ReadBatch(b.rmsgs, 0)
		b.readSyscalls.Add(1)
		if err != nil {
			return 0, netip.AddrPort{}, err
		}
		b.readDatagrams.Add(uint64(n))
		b.r, b.rn, b.rseg = 0, n, 0
	}
	m := &b.rmsgs[b.r]
	data := m.Buffers[0][:m.N]
	seg := len(data)
	if b.gro {
		// A train: datagrams of the segment size, the last one possibly shorter.
		if s := groSegmentSize(m.OOB[:m.NN]); s > 0 && s < len(data) {
			seg = s
			if b.rseg == 0 {
				b.groTrains.Add(1)
			}
		}
	}
	dgram := data[b.rseg:min(b.rseg+seg, len(data))]
	if b.rseg += len(dgram); b.rseg >= len(data) {
		b.r, b.rseg = b.r+1, 0
	}
	var ap netip.AddrPort
	if ua, ok := m.Addr.(*net.UDPAddr); ok {
		ap = ua.AddrPort()
	}
	return copy(p, dgram), ap, nil
}

// Close stops the flusher (sending what is queued) and closes the socket. Idempotent.
func (b *batchConn) Close() error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		close(b.closing)
		b.mu.Unlock()
		<-b.done
		b.Flush()
		err = b.PacketConn.Close()
	})
	return err
}

func (b *batchConn) stats() BatchStats {
	return BatchStats{
		Datagrams: b.datagrams.Load(), Syscalls: b.syscalls.Load(), GSOSends: b.gsoSends.Load(),
		ReadSyscalls: b.readSyscalls.Load(), ReadDatagrams: b.readDatagrams.Load(),
		GROTrains: b.groTrains.Load(),
	}
}
