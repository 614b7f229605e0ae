package voice

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the forwarder's counts: atomics the hot path adds to, exported as Prometheus
// counters (concord_voice_*) and read by Stats.
type counters struct {
	sessions  atomic.Int64
	forwarded atomic.Uint64
	bytes     atomic.Uint64
	dropped   [dropReasons]atomic.Uint64
	msgDrop   atomic.Uint64
	results   map[string]*atomic.Uint64 // sessions_total by result; keys fixed at construction
}

var sessionResults = []string{"created", "replaced", "disabled", "token_required", "bad_token", "forbidden",
	"not_member", "too_many", "bad_offer", "error"}

func newCounters() *counters {
	c := &counters{results: make(map[string]*atomic.Uint64, len(sessionResults))}
	for _, r := range sessionResults {
		c.results[r] = new(atomic.Uint64)
	}
	return c
}

func (c *counters) result(r string) {
	if n, ok := c.results[r]; ok {
		n.Add(1)
	}
}

func (c *counters) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_voice_sessions", Help: "Open voice sessions (docs/protocol.md §10)."},
			func() float64 { return float64(c.sessions.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "concord_voice_forwarded_packets_total", Help: "RTP packets the voice forwarder wrote to listeners' slots."},
			func() float64 { return float64(c.forwarded.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "concord_voice_forwarded_bytes_total", Help: "Bytes of RTP packets the voice forwarder wrote to listeners' slots."},
			func() float64 { return float64(c.bytes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "concord_voice_messages_dropped_total", Help: "Voice data-channel messages from clients ignored (not JSON, unknown type).",
			ConstLabels: prometheus.Labels{"reason": "unknown"}}, func() float64 { return float64(c.msgDrop.Load()) }),
	}
	for r := dropListenOnly; r < dropReasons; r++ {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "concord_voice_dropped_packets_total",
			Help: "RTP packets from publishers the voice forwarder dropped, by reason (docs/protocol.md §10).", ConstLabels: prometheus.Labels{"reason": r.String()}},
			func() float64 { return float64(c.dropped[r].Load()) }))
	}
	for _, res := range sessionResults {
		n := c.results[res]
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "concord_voice_sessions_total",
			Help: "Voice session requests, by result: created, replaced, or the refusal.", ConstLabels: prometheus.Labels{"result": res}},
			func() float64 { return float64(n.Load()) }))
	}
	for _, col := range cs {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	return nil
}

// Stats are the forwarder's counts so far.
type Stats struct {
	Sessions          int
	Forwarded, Bytes  uint64
	DroppedListenOnly uint64
	DroppedBitrate    uint64
	DroppedMuted      uint64
	DroppedMalformed  uint64
	MessagesDropped   uint64
	Created, Replaced uint64
	Refused           map[string]uint64
}

// Stats returns the forwarder's counts. Any goroutine may call it.
func (f *Forwarder) Stats() Stats {
	c := f.c
	s := Stats{Sessions: int(c.sessions.Load()), Forwarded: c.forwarded.Load(), Bytes: c.bytes.Load(),
		DroppedListenOnly: c.dropped[dropListenOnly].Load(), DroppedBitrate: c.dropped[dropBitrate].Load(),
		DroppedMuted: c.dropped[dropMuted].Load(), DroppedMalformed: c.dropped[dropMalformed].Load(),
		MessagesDropped: c.msgDrop.Load(), Created: c.results["created"].Load(), Replaced: c.results["replaced"].Load(),
		Refused: map[string]uint64{}}
	for _, r := range sessionResults[2:] {
		if n := c.results[r].Load(); n > 0 {
			s.Refused[r] = n
		}
	}
	return s
}
