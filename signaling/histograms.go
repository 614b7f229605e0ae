package signaling

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// histograms are the server's distributions, fed by the hub: round-trip times and migration
// pauses as members report them, and the time from join to synced as the hub sees it. They
// exist only when Config.Registerer is set; otherwise every observation is a no-op.
type histograms struct {
	rtt, joinToSynced, pause prometheus.Histogram
}

func (h *histograms) init() {
	opts := func(name, help string, buckets []float64) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Namespace: "concord", Subsystem: "signaling", Name: name, Help: help, Buckets: buckets}
	}
	h.rtt = prometheus.NewHistogram(opts("member_rtt_seconds",
		"Round-trip time of members to their host, one observation per member report.",
		prometheus.ExponentialBuckets(0.0001, 2, 16)))
	h.joinToSynced = prometheus.NewHistogram(opts("join_to_synced_seconds",
		"Time from a member's join to its synced message.", prometheus.ExponentialBuckets(0.005, 2, 14)))
	h.pause = prometheus.NewHistogram(opts("migration_pause_seconds",
		"Host migration pause as members report it: from learning of the new host to having merged its snapshot.",
		prometheus.ExponentialBuckets(0.005, 2, 14)))
}

func (h *histograms) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.rtt, h.joinToSynced, h.pause}
}

// report observes a member's new report against its previous one.
func (h *histograms) report(prev *Report, next Report) {
	if h.rtt == nil {
		return
	}
	if next.RTTMicros > 0 {
		h.rtt.Observe(float64(next.RTTMicros) / 1e6)
	}
	if prev != nil && next.Migrations > prev.Migrations {
		h.pause.Observe(float64(next.PauseMicros) / 1e6)
	}
}

func (h *histograms) synced(d time.Duration) {
	if h.joinToSynced != nil && d >= 0 {
		h.joinToSynced.Observe(d.Seconds())
	}
}
