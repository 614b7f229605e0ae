package crdt

import (
	"encoding/hex"
	"slices"
)

// StateJSON is the canonical JSON form of a replica's state, shared with the @dcl/ecs
// differential vectors and printed by `concord crdt state`. json.Marshal of a StateJSON from
// Replica.StateJSON prints empty lists as [] (never null).
type StateJSON struct {
	// LWW lists the LWW entries sorted by entity (full 32-bit id), then component.
	LWW []LWWJSON `json:"lww"`
	// DeletedEntities lists the highest deleted version per number, sorted by number.
	DeletedEntities []DeletedJSON `json:"deletedEntities"`
	// Append lists the append sets sorted by entity, then component.
	Append []AppendJSON `json:"append"`
}

// LWWJSON is one LWW entry. Data is lowercase hex, "" for an empty value and null (nil) for a
// tombstone (Deleted true).
type LWWJSON struct {
	Entity    uint32  `json:"entity"`
	Component uint32  `json:"component"`
	Timestamp uint32  `json:"timestamp"`
	Deleted   bool    `json:"deleted"`
	Data      *string `json:"data"`
}

// DeletedJSON is the highest deleted version of one entity number.
type DeletedJSON struct {
	Number  uint16 `json:"number"`
	Version uint16 `json:"version"`
}

// AppendJSON is one append set: its distinct values as lowercase hex, sorted as strings.
type AppendJSON struct {
	Entity    uint32   `json:"entity"`
	Component uint32   `json:"component"`
	Values    []string `json:"values"`
}

// StateJSON returns the canonical JSON form of the state (CRDT.md). Append values appear without
// their timestamps, so two states that differ only in append timestamps print alike; Hash tells
// them apart.
func (r *Replica) StateJSON() StateJSON {
	st := StateJSON{
		LWW:             make([]LWWJSON, 0, r.lww.n),
		DeletedEntities: make([]DeletedJSON, 0, r.nDeleted),
		Append:          make([]AppendJSON, 0, len(r.app)),
	}
	r.Range(func(e Entry) bool {
		row := LWWJSON{Entity: uint32(e.Entity), Component: uint32(e.Component), Timestamp: uint32(e.Timestamp), Deleted: e.Deleted}
		if !e.Deleted {
			h := hex.EncodeToString(e.Data)
			row.Data = &h
		}
		st.LWW = append(st.LWW, row)
		return true
	})
	r.RangeDeleted(func(number, version uint16) bool {
		st.DeletedEntities = append(st.DeletedEntities, DeletedJSON{Number: number, Version: version})
		return true
	})
	for _, k := range r.sortedApp() {
		set := r.app[k]
		a := AppendJSON{Entity: uint32(keyEntity(k)), Component: uint32(keyComponent(k)), Values: make([]string, 0, len(set.vals))}
		for _, v := range set.vals {
			a.Values = append(a.Values, hex.EncodeToString(v.data))
		}
		slices.Sort(a.Values)
		st.Append = append(st.Append, a)
	}
	return st
}
