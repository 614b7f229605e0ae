package hostsnapshot

import (
	"slices"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// Cache keeps, between Builds of whole-world snapshots of one replica, each page of 256 entity
// numbers' share of the snapshot already encoded (its spawns, their stamps, and its entities'
// stream messages). A Build through it re-encodes only the pages in which a number changed since
// (crdt.Replica.PageChanges) and copies the rest, and skips the sort of every LWW key that the
// walk of the whole replica needs: a late joiner's snapshot of a 10,000-entity world in which a
// few pages move. The output is the same bytes a Build without it makes (TestCacheBuildsTheSame).
//
// A Cache serves the snapshots that carry every bucket without a Keep (a late join's); others
// are built as before. Its zero value is ready; it belongs to one goroutine, like the replica.
type Cache struct {
	r     *crdt.Replica
	t     *schema.Table
	pages [256]cachePage
	live  []crdt.Entity // scratch: one page's live entities
	order []uint32      // scratch: the groups of every page, as page | group index << 8
	// Build's scratch for the spawns and stamps it copies out (the arena stays with dst).
	spawns []spawnRef
	stamps []crdt.Timestamp
}

// cachePage is one page's share of a snapshot, as of the replica's Changes() at.
type cachePage struct {
	built  bool
	at     uint64
	groups []cacheGroup // ascending by version: each is a run of the snapshot's entity order
}

// cacheGroup is what Build makes of a page's live entities of one version, in number order: in
// the snapshot's order (the full 32-bit id, version first) they follow one another.
type cacheGroup struct {
	version uint16
	spawns  []spawnRef // offsets into arena
	arena   []byte
	stamps  []crdt.Timestamp
	stream  []byte
}

// fill appends the LWW share of a whole-world snapshot of r to b (what walkCover's LWW walk and
// flush append), refreshing the pages that changed since they were encoded.
func (c *Cache) fill(b *builder) {
	if c.r != b.r || c.t != b.t {
		*c = Cache{r: b.r, t: b.t, live: c.live, order: c.order, spawns: c.spawns, stamps: c.stamps}
	}
	c.order = c.order[:0]
	for p := range c.pages {
		c.refresh(p)
		for g := range c.pages[p].groups {
			c.order = append(c.order, uint32(p)|uint32(g)<<8)
		}
	}
	// By version, then page: the snapshot's entity order.
	slices.SortFunc(c.order, func(x, y uint32) int {
		gx, gy := &c.pages[x&0xff].groups[x>>8], &c.pages[y&0xff].groups[y>>8]
		if gx.version != gy.version {
			return int(gx.version) - int(gy.version)
		}
		return int(x&0xff) - int(y&0xff)
	})
	for _, k := range c.order {
		g := &c.pages[k&0xff].groups[k>>8]
		off := len(b.arena)
		b.arena = append(b.arena, g.arena...)
		for _, s := range g.spawns {
			s.creation[0] += off
			s.creation[1] += off
			s.update[0] += off
			s.update[1] += off
			b.spawns = append(b.spawns, s)
		}
		b.stamps = append(b.stamps, g.stamps...)
		b.stream = append(b.stream, g.stream...)
	}
}

// refresh encodes page p again if a number in it changed since it was encoded.
func (c *Cache) refresh(p int) {
	pg := &c.pages[p]
	if pg.built && c.r.PageChanges(uint8(p)) <= pg.at {
		return
	}
	c.live = c.live[:0]
	for j := range 256 {
		n := uint16(p<<8 | j)
		if v, ok := c.r.LiveVersion(n); ok {
			c.live = append(c.live, crdt.NewEntity(n, v))
		}
	}
	slices.Sort(c.live)
	groups := pg.groups[:0]
	pb := builder{r: c.r, t: c.t, cover: All(0)}
	for i := 0; i < len(c.live); {
		version := c.live[i].Version()
		if len(groups) < cap(groups) {
			groups = groups[:len(groups)+1]
		} else {
			groups = append(groups, cacheGroup{})
		}
		g := &groups[len(groups)-1]
		g.version = version
		pb.spawns, pb.arena, pb.stamps, pb.stream = g.spawns[:0], g.arena[:0], g.stamps[:0], g.stream[:0]
		for ; i < len(c.live) && c.live[i].Version() == version; i++ {
			c.r.RangeEntity(c.live[i], func(en crdt.Entry) bool {
				pb.entries = append(pb.entries, en)
				return true
			})
			pb.flush()
		}
		g.spawns, g.arena, g.stamps, g.stream = pb.spawns, pb.arena, pb.stamps, pb.stream
	}
	pg.groups = groups
	pg.built, pg.at = true, c.r.Changes()
}
