package bench

import (
	"math/bits"
	"sort"
	"time"
)

// hist counts durations in log-linear buckets: 1 µs wide below 64 µs, then 32 buckets per
// power of two (about 3% wide), which is precise enough for percentiles.
type hist struct {
	counts [2048]uint64
	n      uint64
}

func histIndex(ns int64) int {
	u := uint64(max(ns, 0)) / 1000
	if u < 64 {
		return int(u)
	}
	shift := bits.Len64(u) - 6
	return 64 + (shift-1)*32 + int(u>>shift) - 32
}

// histValue is the midpoint of bucket i.
func histValue(i int) time.Duration {
	if i < 64 {
		return time.Duration(i)*time.Microsecond + 500*time.Nanosecond
	}
	shift := (i-64)/32 + 1
	s := uint64((i-64)%32) + 32
	lo, hi := s<<shift, (s+1)<<shift
	return time.Duration((lo+hi)/2) * time.Microsecond
}

func (h *hist) add(ns int64) { h.addN(ns, 1) }

func (h *hist) addN(ns int64, n uint64) {
	h.counts[min(histIndex(ns), len(h.counts)-1)] += n
	h.n += n
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// above returns the fraction of the values at or above d (to the bucket's precision).
func (h *hist) above(d time.Duration) float64 {
	if h.n == 0 {
		return 0
	}
	var n uint64
	for i := histIndex(int64(d)); i < len(h.counts); i++ {
		n += h.counts[i]
	}
	return float64(n) / float64(h.n)
}

// quantile returns the q-quantile (0 < q ≤ 1), or 0 for an empty hist.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	target := uint64(q*float64(h.n) + 0.5)
	target = max(target, 1)
	var cum uint64
	for i, c := range h.counts {
		if cum += c; cum >= target {
			return histValue(i)
		}
	}
	return histValue(len(h.counts) - 1)
}

// quantile is the nearest-rank q-quantile of ds (which it sorts).
func quantile(ds []time.Duration, q float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}
