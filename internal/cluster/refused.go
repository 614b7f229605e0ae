package cluster

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of concord_cluster_refused_total: what a decoder refused (errors.go).
const (
	reasonShortFrame   = "short_frame"
	reasonUnknownKind  = "unknown_kind"
	reasonFrameTooLong = "frame_too_long"
	reasonBadMessage   = "bad_message"
	reasonVersion      = "version"
)

var refusalReasons = [...]string{reasonShortFrame, reasonUnknownKind, reasonFrameTooLong, reasonBadMessage, reasonVersion}

// reasonOf names the reason of a decoder's error.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, ErrShortFrame):
		return reasonShortFrame
	case errors.Is(err, ErrUnknownKind):
		return reasonUnknownKind
	case errors.Is(err, ErrFrameTooLong):
		return reasonFrameTooLong
	case errors.Is(err, ErrVersion):
		return reasonVersion
	}
	return reasonBadMessage
}

// refusals counts the messages from other nodes that did not decode, by reason.
type refusals [len(refusalReasons)]atomic.Uint64

var descRefused = prometheus.NewDesc("concord_cluster_refused_total",
	"Messages from other nodes (relay frames, control messages) dropped because they did not decode, by reason.", []string{"reason"}, nil)

func (r *refusals) add(err error) {
	reason := reasonOf(err)
	for i, name := range refusalReasons {
		if name == reason {
			r[i].Add(1)
		}
	}
}

// count is the refusals of reason so far.
func (r *refusals) count(reason string) uint64 {
	for i, name := range refusalReasons {
		if name == reason {
			return r[i].Load()
		}
	}
	return 0
}

func (r *refusals) collect(ch chan<- prometheus.Metric) {
	for i, name := range refusalReasons {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(r[i].Load()), name)
	}
}

// refuse counts a message that did not decode; the sender is another node, so the log is debug
// (the metric is what an operator watches).
func (n *Node) refuse(err error) {
	n.refused.add(err)
	n.log.Debug().Err(err).Msg("message from another node refused")
}
