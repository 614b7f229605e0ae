package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// rawTemplates builds the datagrams a Concord host sends every tick for m entities of the bench
// schema (a 6-byte position and an 8-byte time each): EntityUpdates packed to at most MaxDatagram bytes, one stamp, entity ids from the first spawn
// number on. The time field (bytes 1–8) is rewritten with the send time every tick.
func rawTemplates(m int) [][]byte { return rawTemplatesOf(schemas, m) }

// rawTemplatesOf is rawTemplates for the mover of table t (-schema).
func rawTemplatesOf(t *schema.Table, m int) [][]byte {
	s, _ := t.Lookup(schemaMover)
	width, _ := netmsg.MaskWidth(len(s.Properties))
	data := make([]byte, s.Properties[propPos].Size+s.Properties[propSent].Size)
	var out [][]byte
	var w netmsg.EntityUpdatesWriter
	w.Reset(make([]byte, 0, netmsg.MaxDatagram), 0, netmsg.MaxDatagram)
	for i := range m {
		u := netmsg.Update{NetworkID: uint64(peer.FirstSpawnNumber) + uint64(i), Width: width, Mask: 0b11, Data: data}
		if !w.Add(&u) {
			out = append(out, w.Bytes())
			w.Reset(make([]byte, 0, netmsg.MaxDatagram), 0, netmsg.MaxDatagram)
			w.Add(&u)
		}
	}
	if w.Count() > 0 {
		out = append(out, w.Bytes())
	}
	return out
}

// rawReceiver is one end of a raw baseline pair: it reads the send time and the update count of
// every datagram, on its read goroutine (no copy, no loop, no merge).
type rawReceiver struct {
	recording *atomic.Bool
	hist      hist // written by the unreliable read goroutine; read after Close
}

func (r *rawReceiver) handle(ch link.Channel, b []byte) {
	if ch != link.Unreliable || len(b) < 13 || b[0] != byte(netmsg.TypeEntityUpdates) || !r.recording.Load() {
		return
	}
	sent := int64(binary.LittleEndian.Uint64(b[1:]))
	count := binary.LittleEndian.Uint32(b[9:])
	r.hist.addN(time.Now().UnixNano()-sent, uint64(count))
}

// rawPair is a sender (host) and a receiver (bot) link.Conn, joined by a relay goroutine that
// carries their signals.
type rawPair struct {
	api    *link.API // the receiver's
	tx, rx *link.Conn
	recv   *rawReceiver
}

// rawPairs is the baseline's set of pairs and the relays they own.
type rawPairs struct {
	sendAPI *link.API
	wire    *wireCounter // the sender's packets
	pairs   []*rawPair
	stop    chan struct{}
	relays  sync.WaitGroup
}

// dialRawPairs connects n pairs through in-process relays and waits until every link is open.
func dialRawPairs(ctx context.Context, n int, pion zerolog.Logger, recording *atomic.Bool) (*rawPairs, error) {
	wire, err := newWireCounter()
	if err != nil {
		return nil, err
	}
	sendAPI, err := link.NewAPI(link.Config{Logger: pion, Net: wire})
	if err != nil {
		return nil, err
	}
	rp := &rawPairs{sendAPI: sendAPI, wire: wire, stop: make(chan struct{})}
	for range n {
		if err := rp.add(pion, recording); err != nil {
			rp.close()
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(n)*100*time.Millisecond)
	defer cancel()
	for _, p := range rp.pairs {
		for _, c := range []*link.Conn{p.tx, p.rx} {
			if err := c.WaitReady(rctx); err != nil {
				rp.close()
				return nil, fmt.Errorf("raw pair not ready: %w", err)
			}
		}
	}
	return rp, nil
}

func (rp *rawPairs) add(pion zerolog.Logger, recording *atomic.Bool) error {
	api, err := link.NewAPI(link.Config{Logger: pion})
	if err != nil {
		return err
	}
	p := &rawPair{api: api, recv: &rawReceiver{recording: recording}}
	rp.pairs = append(rp.pairs, p)
	toTx, toRx := make(chan link.Signal, 64), make(chan link.Signal, 64)
	queue := func(ch chan link.Signal) func(link.Signal) error {
		return func(s link.Signal) error {
			select {
			case ch <- s:
				return nil
			default:
				return errors.New("relay queue full")
			}
		}
	}
	// As in Concord, the receiver (member) offers and the sender (host) answers.
	if p.tx, err = rp.sendAPI.NewAnswerer(link.ConnConfig{Signal: queue(toRx), Logger: pion}); err != nil {
		return err
	}
	if p.rx, err = api.NewOfferer(link.ConnConfig{Signal: queue(toTx), Handler: p.recv.handle, Logger: pion}); err != nil {
		return err
	}
	rp.relays.Add(1)
	go func() {
		defer rp.relays.Done()
		for {
			select {
			case <-rp.stop:
				return
			case s := <-toTx:
				_ = p.tx.HandleSignal(s)
			case s := <-toRx:
				_ = p.rx.HandleSignal(s)
			}
		}
	}()
	return nil
}

// closeReceivers closes the receiving ends, after which their histograms may be read.
func (rp *rawPairs) closeReceivers() {
	for _, p := range rp.pairs {
		if p.rx != nil {
			_ = p.rx.Close()
		}
	}
}

// close closes every link, stops the relays and closes the APIs.
func (rp *rawPairs) close() {
	rp.closeReceivers()
	for _, p := range rp.pairs {
		if p.tx != nil {
			_ = p.tx.Close()
		}
	}
	close(rp.stop)
	rp.relays.Wait()
	for _, p := range rp.pairs {
		_ = p.api.Close()
	}
	_ = rp.sendAPI.Close()
}

// rawCounts is a reading of every pair's link counters.
type rawCounts struct {
	hostIn, hostOut, botIn, botOut, dgrams, dgramBytes, dropped uint64
}

func (rp *rawPairs) counts() (c rawCounts) {
	for _, p := range rp.pairs {
		ts, rs := p.tx.Stats(), p.rx.Stats()
		c.dropped += ts.Channels[link.Unreliable].Dropped
		for ch := range link.NumChannels {
			c.hostIn += ts.Channels[ch].BytesReceived
			c.hostOut += ts.Channels[ch].BytesSent
			c.botIn += rs.Channels[ch].BytesReceived
			c.botOut += rs.Channels[ch].BytesSent
		}
		c.dgrams += rs.Channels[link.Unreliable].MessagesReceived
		c.dgramBytes += rs.Channels[link.Unreliable].BytesReceived
	}
	return c
}

// send runs the baseline's host until stop is closed: every tick, stamp the datagrams and send
// them to every receiver in turn, as the Concord host's flush does.
func (rp *rawPairs) send(tmpl [][]byte, stop <-chan struct{}) {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		now := uint64(time.Now().UnixNano())
		for _, d := range tmpl {
			binary.LittleEndian.PutUint64(d[1:], now)
		}
		for _, p := range rp.pairs {
			for _, d := range tmpl {
				_ = p.tx.Send(link.Unreliable, d)
			}
		}
	}
}

// rawPhase sends the Concord host's datagrams through raw link.Conn pairs and measures one
// window.
func rawPhase(ctx context.Context, o FanoutOptions, log zerolog.Logger) (*phase, error) {
	recording := new(atomic.Bool)
	rp, err := dialRawPairs(ctx, o.Bots, pionLogger(log), recording)
	if err != nil {
		return nil, err
	}
	defer rp.close()
	sendStop, sendDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sendDone)
		rp.send(rawTemplatesOf(schemaTable(o.Schema), o.Entities), sendStop)
	}()
	stopSender := func() {
		close(sendStop)
		<-sendDone
	}
	if err := sleep(ctx, o.Warmup); err != nil {
		stopSender()
		return nil, err
	}
	w0, c0, t0, cpu0 := rp.wire.counts(), rp.counts(), time.Now(), cpuTime()
	recording.Store(true)
	err = sleep(ctx, o.Duration)
	recording.Store(false)
	t1, cpu1, c1, w1 := time.Now(), cpuTime(), rp.counts(), rp.wire.counts()
	stopSender()
	if err != nil {
		return nil, err
	}
	res := &phase{wall: t1.Sub(t0), cpu: cpu1 - cpu0, wire: w1.sub(w0)}
	secs, n := res.wall.Seconds(), float64(len(rp.pairs))
	res.hostIn, res.hostOut = float64(c1.hostIn-c0.hostIn)/secs, float64(c1.hostOut-c0.hostOut)/secs
	res.botIn, res.botOut = float64(c1.botIn-c0.botIn)/secs/n, float64(c1.botOut-c0.botOut)/secs/n
	res.dgrams = float64(c1.dgrams-c0.dgrams) / secs / n
	res.dropped = float64(c1.dropped-c0.dropped) / secs
	if c1.dgrams > c0.dgrams {
		res.dgramLen = float64(c1.dgramBytes-c0.dgramBytes) / float64(c1.dgrams-c0.dgrams)
	}
	// The histograms belong to the read goroutines: close the links first.
	rp.closeReceivers()
	for _, p := range rp.pairs {
		res.lat.merge(&p.recv.hist)
	}
	res.updates = float64(res.lat.n) / secs / n
	return res, nil
}
