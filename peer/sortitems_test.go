package peer

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/concordrtc/concord/crdt"
)

// sortItems orders items exactly as a comparison sort by (timestamp, entity) does: small and
// large sets, one timestamp and many, entity numbers and versions that differ in any byte.
func TestSortItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var scratch []updItem
	for _, n := range []int{0, 1, 5, 63, 64, 65, 1000, 5000} {
		for _, tsSpread := range []uint32{1, 3, 1 << 31} {
			items := make([]updItem, n)
			for i := range items {
				items[i] = updItem{
					ts: crdt.Timestamp(rng.Uint32N(tsSpread)), e: Entity(rng.Uint32()),
					mask: uint32(i), ref: i,
				}
			}
			want := slices.Clone(items)
			slices.SortStableFunc(want, func(a, b updItem) int { return cmp.Compare(itemKey(&a), itemKey(&b)) })
			scratch = sortItems(items, scratch)
			if !slices.Equal(items, want) {
				t.Fatalf("n %d, timestamps spread %d: sortItems differs from a stable comparison sort", n, tsSpread)
			}
		}
	}
}

func BenchmarkSortItems(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := make([]updItem, 1000)
	for i := range base {
		base[i] = updItem{ts: 77, e: Entity(1<<16 | rng.Uint32N(1000)), ref: i}
	}
	items := make([]updItem, len(base))
	b.Run("radix", func(b *testing.B) {
		var scratch []updItem
		b.ReportAllocs()
		for b.Loop() {
			copy(items, base)
			scratch = sortItems(items, scratch)
		}
	})
	b.Run("pdqsort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(items, base)
			slices.SortFunc(items, func(a, b updItem) int {
				if c := cmp.Compare(a.ts, b.ts); c != 0 {
					return c
				}
				return cmp.Compare(a.e, b.e)
			})
		}
	})
}
