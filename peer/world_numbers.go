package peer

import "github.com/concordrtc/concord/crdt"

// numberIndex maps an entity number to the indexed entity of that number (World.byNumber), in
// pages of 256 numbers allocated on first use, as the replica keeps its records: a late join
// indexes 10,000 entities in one snapshot, and a map grew and rehashed through them (with a hash
// per value merged); here a set is two loads and a store, and a 10,000-entity world takes 40 pages
// of 1 KiB where the map took ≈ 200 KiB.
type numberIndex struct {
	pages [256]*[256]uint32 // the entity's version + 1; 0: none
}

// get returns the indexed entity of number n.
func (x *numberIndex) get(n uint16) (Entity, bool) {
	p := x.pages[n>>8]
	if p == nil || p[n&0xff] == 0 {
		return 0, false
	}
	return crdt.NewEntity(n, uint16(p[n&0xff]-1)), true
}

// set makes e its number's entity.
func (x *numberIndex) set(e Entity) {
	n := e.Number()
	p := x.pages[n>>8]
	if p == nil {
		p = new([256]uint32)
		x.pages[n>>8] = p
	}
	p[n&0xff] = uint32(e.Version()) + 1
}

// del drops number n's entity.
func (x *numberIndex) del(n uint16) {
	if p := x.pages[n>>8]; p != nil {
		p[n&0xff] = 0
	}
}
