package signaling

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Stats are the server's counters, read with Server.Stats.
type Stats struct {
	// Rooms and Members are the current number of rooms and members.
	Rooms, Members int64
	// Conns is the current number of websocket connections, joined or not.
	Conns int64
	// Joins counts accepted joins.
	Joins uint64
	// RejectedJoins counts refused joins (bad token, room full, ...).
	RejectedJoins uint64
	// SlowConsumers counts members dropped because their send queue was full.
	SlowConsumers uint64
	// PingTimeouts counts members dropped because they stopped answering.
	PingTimeouts uint64
	// BadMessages counts messages answered with an error.
	BadMessages uint64
	// RelayErrors counts signals that could not be relayed.
	RelayErrors uint64
}

// stats are updated with atomics by whichever goroutine sees the event.
type stats struct {
	rooms, members, conns                                     atomic.Int64
	joins, rejected, slow, timeouts, badMessages, relayErrors atomic.Uint64
	hist                                                      histograms
}

func (s *stats) snapshot() Stats {
	return Stats{
		Rooms: s.rooms.Load(), Members: s.members.Load(), Conns: s.conns.Load(),
		Joins: s.joins.Load(), RejectedJoins: s.rejected.Load(), SlowConsumers: s.slow.Load(),
		PingTimeouts: s.timeouts.Load(), BadMessages: s.badMessages.Load(), RelayErrors: s.relayErrors.Load(),
	}
}

// register adds the counters to reg as func-backed collectors.
func (s *stats) register(reg prometheus.Registerer, log zerolog.Logger) {
	gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "concord", Subsystem: "signaling", Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "concord", Subsystem: "signaling", Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	s.hist.init()
	for _, c := range append([]prometheus.Collector{
		gauge("rooms", "Current number of rooms.", &s.rooms),
		gauge("members", "Current number of joined members.", &s.members),
		gauge("connections", "Current number of websocket connections.", &s.conns),
		counter("joins_total", "Accepted joins.", &s.joins),
		counter("rejected_joins_total", "Refused joins.", &s.rejected),
		counter("slow_consumer_drops_total", "Members dropped because their send queue was full.", &s.slow),
		counter("ping_timeouts_total", "Members dropped because they stopped answering pings.", &s.timeouts),
		counter("bad_messages_total", "Inbound messages answered with an error.", &s.badMessages),
		counter("relay_errors_total", "Signals that could not be relayed.", &s.relayErrors),
	}, s.hist.collectors()...) {
		if err := reg.Register(c); err != nil {
			log.Error().Err(err).Msg("signaling: registering metric")
		}
	}
}
