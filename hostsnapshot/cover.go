package hostsnapshot

import "fmt"

const (
	// DefaultBuckets is the bucket count a zero Cover stands for.
	DefaultBuckets = 256
	// MaxBuckets bounds the bucket count a snapshot may declare.
	MaxBuckets = 4096
)

// Cover is the set of buckets a snapshot carries, out of a bucket count: an entity belongs to bucket
// number % count. The zero Cover is every bucket out of DefaultBuckets.
type Cover struct {
	count int
	// some is nil for "every bucket"; otherwise bit b set means bucket b is covered.
	some []byte
	// keep, when set, narrows the covered buckets to the entity numbers it accepts (a member's
	// interest): Number asks it, the buckets themselves are unchanged on the wire.
	keep func(n uint16) bool
}

// All covers every bucket out of count (count ≤ 0 means DefaultBuckets).
func All(count int) Cover {
	if count <= 0 {
		count = DefaultBuckets
	}
	return Cover{count: count}
}

// Only covers the listed buckets out of count (count ≤ 0 means DefaultBuckets). Buckets outside
// [0, count) are ignored.
func Only(count int, buckets ...int) Cover {
	if count <= 0 {
		count = DefaultBuckets
	}
	c := Cover{count: count, some: make([]byte, (count+7)/8)}
	for _, b := range buckets {
		if b >= 0 && b < count {
			c.some[b/8] |= 1 << (b % 8)
		}
	}
	return c
}

// Count is the bucket count.
func (c Cover) Count() int {
	if c.count <= 0 {
		return DefaultBuckets
	}
	return c.count
}

// Has reports whether bucket b is covered.
func (c Cover) Has(b int) bool {
	if b < 0 || b >= c.Count() {
		return false
	}
	return c.some == nil || c.some[b/8]&(1<<(b%8)) != 0
}

// Number reports whether entity number n falls in a covered bucket.
func (c Cover) Number(n uint16) bool {
	return c.Has(int(n)%c.Count()) && (c.keep == nil || c.keep(n))
}

// Len is the number of covered buckets.
func (c Cover) Len() int {
	n := 0
	for b := range c.Count() {
		if c.Has(b) {
			n++
		}
	}
	return n
}

// IsAll reports whether every bucket is covered.
func (c Cover) IsAll() bool { return c.Len() == c.Count() }

func (c Cover) String() string { return fmt.Sprintf("%d/%d buckets", c.Len(), c.Count()) }

func (c Cover) appendBitmap(dst []byte) []byte {
	for i := range (c.Count() + 7) / 8 {
		var by byte
		for j := range 8 {
			if c.Has(i*8 + j) {
				by |= 1 << j
			}
		}
		dst = append(dst, by)
	}
	return dst
}
