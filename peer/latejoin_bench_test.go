package peer

import (
	"encoding/binary"
	"testing"
)

// BenchmarkLateJoin10k is a late join in process: a host holding 10,000 boxes of three 4-byte
// properties, and each iteration one more member that joins it and syncs, over the step
// harness's fake links (the host's build and send, the member's merge, its index and events, and
// its first status). Its CPU per join, alternating binaries, is what a change to the join path
// saves on both sides (docs/benchmarks-history.md, "Late join").
func BenchmarkLateJoin10k(b *testing.B) {
	n := newStepNet(b)
	n.join(1, &stepApp{table: stepSchemas(crdtProperty("a", 1101), crdtProperty("b", 1102))}, 1, 1)
	n.do(1, func(w *World) {
		v := make([]byte, 4)
		for i := range 10_000 {
			binary.LittleEndian.PutUint32(v, uint32(i))
			if _, err := w.Spawn(stepSchemaBox, nil, v, v, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	idx := PeerIndex(2)
	for b.Loop() {
		m := n.join(idx, &stepApp{table: stepSchemas(crdtProperty("a", 1101), crdtProperty("b", 1102))}, 1, 1)
		if !m.member.synced || m.w.Len() < 10_000 {
			b.Fatalf("member %d synced %v with %d entities", idx, m.member.synced, m.w.Len())
		}
		idx++
	}
}
