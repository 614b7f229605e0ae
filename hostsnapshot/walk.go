package hostsnapshot

import (
	"slices"

	"github.com/concordrtc/concord/crdt"
)

// sparseCover is the largest share of buckets (1/sparseCover of them) for which walkCover reads
// the covered entity numbers one by one rather than walking the whole replica: a migration's
// snapshot covers the few buckets in which two nearly equal replicas differ.
const sparseCover = 8

// walkCover calls del, lww and app for the canonical messages of the covered buckets, in the
// order of the canonical state stream (crdt.Replica.AppendState): deleted numbers ascending, then
// LWW entries by (entity, component), then append values; only of the numbers the cover keeps.
// The functions must not modify r; lww may be nil (no LWW entry is wanted).
func walkCover(r *crdt.Replica, cover Cover, del func(number, version uint16), lww func(crdt.Entry), app func(crdt.AppendEntry)) {
	if cover.Len()*sparseCover >= cover.Count() {
		r.RangeDeleted(func(number, version uint16) bool {
			if cover.Number(number) {
				del(number, version)
			}
			return true
		})
		if lww != nil {
			r.Range(func(en crdt.Entry) bool {
				if cover.Number(en.Entity.Number()) {
					lww(en)
				}
				return true
			})
		}
		r.RangeAppend(func(a crdt.AppendEntry) bool {
			if cover.Number(a.Entity.Number()) {
				app(a)
			}
			return true
		})
		return
	}
	count := cover.Count()
	numbers := make([]uint16, 0, cover.Len()*(0x10000/count+1))
	for b := range count {
		if cover.Has(b) {
			for n := b; n <= 0xffff; n += count {
				if cover.keep == nil || cover.keep(uint16(n)) {
					numbers = append(numbers, uint16(n))
				}
			}
		}
	}
	slices.Sort(numbers)
	var live []crdt.Entity
	for _, n := range numbers {
		if v, ok := r.DeletedVersion(n); ok {
			del(n, v)
		}
		if v, ok := r.LiveVersion(n); ok {
			live = append(live, crdt.NewEntity(n, v))
		}
	}
	slices.Sort(live) // the full 32-bit id: version, then number
	for _, e := range live {
		if lww == nil {
			break
		}
		r.RangeEntity(e, func(en crdt.Entry) bool { lww(en); return true })
	}
	for _, e := range live {
		r.RangeEntityAppend(e, func(a crdt.AppendEntry) bool { app(a); return true })
	}
}
