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
	// Refused counts refusals by the error code the sender was told (joins, signals, claims,
	// reports, repeat offenders dropped); codes never seen are absent.
	Refused map[ErrorCode]uint64
	// RefusedConns counts websocket handshakes refused at a connection cap, by cap:
	// "total" (Config.MaxConns) or "address" (Config.MaxConnsPerAddr).
	RefusedConns map[string]uint64
	// RefusedHosts counts HTTP requests refused for their Host header (Config.AllowedHosts).
	RefusedHosts uint64
	// ShedSignals counts signals the server did not relay because their recipient's queue or
	// budget was full (each also counted in Refused as recipient_busy).
	ShedSignals uint64
	// StoreErrors counts Config.Store calls that failed or, for a load, did not answer within
	// Config.StoreTimeout.
	StoreErrors uint64
}

// stats are updated with atomics by whichever goroutine sees the event.
type stats struct {
	rooms, members, conns, relayed                            atomic.Int64
	joins, rejected, slow, timeouts, badMessages, relayErrors atomic.Uint64
	refused                                                   [len(codeTable)]atomic.Uint64
	connsTotal, connsAddr, shed, hostRefused, storeErrors     atomic.Uint64
	hist                                                      histograms
}

// refuse counts a refusal under err's wire code.
func (s *stats) refuse(err error) {
	code := codeOf(err)
	for i, e := range codeTable {
		if e.code == code {
			s.refused[i].Add(1)
			return
		}
	}
}

func (s *stats) snapshot() Stats {
	st := Stats{
		Rooms: s.rooms.Load(), Members: s.members.Load(), Conns: s.conns.Load(),
		Joins: s.joins.Load(), RejectedJoins: s.rejected.Load(), SlowConsumers: s.slow.Load(),
		PingTimeouts: s.timeouts.Load(), BadMessages: s.badMessages.Load(), RelayErrors: s.relayErrors.Load(),
		Refused:      make(map[ErrorCode]uint64),
		RefusedConns: map[string]uint64{"total": s.connsTotal.Load(), "address": s.connsAddr.Load()},
		ShedSignals:  s.shed.Load(),
		RefusedHosts: s.hostRefused.Load(),
		StoreErrors:  s.storeErrors.Load(),
	}
	for i := range s.refused {
		if n := s.refused[i].Load(); n > 0 {
			st.Refused[codeTable[i].code] = n
		}
	}
	return st
}

// limits lists the server's configured limits, as reported in concord_signaling_limit.
func (c *Config) limits() map[string]float64 {
	return map[string]float64{
		"max_members": float64(c.MaxMembers), "max_rooms": float64(c.MaxRooms), "max_conns": float64(c.MaxConns),
		"max_conns_per_addr": float64(c.MaxConnsPerAddr), "max_devices_per_token": float64(c.MaxDevicesPerToken),
		"sync_timeout_seconds": c.SyncTimeout.Seconds(), "signal_rate": c.SignalRate, "signal_burst": float64(c.SignalBurst),
		"recv_signal_rate": c.RecvSignalRate, "recv_signal_burst": float64(c.RecvSignalBurst),
		"error_rate": c.ErrorRate, "error_burst": float64(c.ErrorBurst),
		"ping_interval_seconds": c.PingInterval.Seconds(), "pong_wait_seconds": c.PongWait.Seconds(),
		"send_queue": float64(c.SendQueue), "read_limit_bytes": float64(c.ReadLimit),
		"max_sdp_bytes": MaxSDPLen, "max_candidate_bytes": MaxCandidateLen,
		"max_term": float64(MaxTerm), "max_term_skew": float64(MaxTermSkew), "max_bans_per_room": float64(c.MaxBansPerRoom),
	}
}

// register adds the counters to reg as func-backed collectors, and the limits of cfg as
// constant gauges.
func (s *stats) register(reg prometheus.Registerer, cfg *Config, log zerolog.Logger) {
	gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "concord", Subsystem: "signaling", Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "concord", Subsystem: "signaling", Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	cs := []prometheus.Collector{
		gauge("rooms", "Current number of rooms.", &s.rooms),
		gauge("members", "Current number of joined members.", &s.members),
		gauge("connections", "Current number of websocket connections.", &s.conns),
		gauge("relayed_connections", "Websockets accepted here and relayed to the node that owns their room (Config.Router).", &s.relayed),
		counter("joins_total", "Accepted joins.", &s.joins),
		counter("rejected_joins_total", "Refused joins.", &s.rejected),
		counter("slow_consumer_drops_total", "Members dropped because their send queue was full.", &s.slow),
		counter("ping_timeouts_total", "Members dropped because they stopped answering pings.", &s.timeouts),
		counter("bad_messages_total", "Inbound messages answered with an error.", &s.badMessages),
		counter("relay_errors_total", "Signals that could not be relayed.", &s.relayErrors),
		counter("shed_signals_total", "Signals not relayed because the recipient's queue or budget was full.", &s.shed),
		counter("refused_hosts_total", "HTTP requests refused because their Host header is not allowed.", &s.hostRefused),
		counter("store_errors_total", "Room counter loads and saves that failed or timed out (the room waited; the hub did not).", &s.storeErrors),
	}
	for i := range s.refused {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "concord", Subsystem: "signaling", Name: "refusals_total",
			Help:        "Refused messages, joins and claims by the error code the sender was told; repeat offenders dropped count as too_many_errors.",
			ConstLabels: prometheus.Labels{"code": string(codeTable[i].code)}}, func() float64 { return float64(s.refused[i].Load()) }))
	}
	for _, c := range []struct {
		name string
		v    *atomic.Uint64
	}{{"total", &s.connsTotal}, {"address", &s.connsAddr}} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "concord", Subsystem: "signaling", Name: "refused_connections_total",
			Help:        "Websocket handshakes refused at a connection cap (total: MaxConns, address: MaxConnsPerAddr).",
			ConstLabels: prometheus.Labels{"cap": c.name}}, func() float64 { return float64(c.v.Load()) }))
	}
	for name, v := range cfg.limits() {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "concord", Subsystem: "signaling", Name: "limit",
			Help: "The server's configured limits (docs/protocol.md \"Signaling: limits\").", ConstLabels: prometheus.Labels{"name": name}},
			func() float64 { return v }))
	}
	s.hist.init()
	cs = append(cs, s.hist.collectors()...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			log.Error().Err(err).Msg("signaling: registering metric")
		}
	}
}
