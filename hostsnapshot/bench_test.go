package hostsnapshot

import (
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
)

const benchEntities = 10_000

// benchWorld is 10,000 entities × 3 properties of 12 bytes (benchTable).
func benchWorld(b *testing.B) *crdt.Replica {
	b.Helper()
	return bodyWorld(b, numberRange(512, 512+benchEntities), 1)
}

// BenchmarkBuildEncodeDecodeApply10k is a whole join: the host builds and encodes a snapshot, the
// member decodes it and applies it into a fresh replica. Buffers are reused across iterations
// as a host and a member would reuse them.
func BenchmarkBuildEncodeDecodeApply10k(b *testing.B) {
	src := benchWorld(b)
	var snap, got netmsg.HostSnapshot
	var wire, corr []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(&snap, src, benchTable, Options{})
		wire = netmsg.AppendHostSnapshot(wire[:0], &snap)
		if _, err := netmsg.ConsumeHostSnapshot(wire, &got); err != nil {
			b.Fatal(err)
		}
		dst := crdt.New(crdt.Config{})
		var err error
		if _, corr, err = Apply(dst, benchTable, &got, dst.Merge, corr[:0]); err != nil {
			b.Fatal(err)
		}
		if len(corr) != 0 {
			b.Fatal("corrections from an empty replica")
		}
	}
	b.SetBytes(int64(len(wire)))
}

// BenchmarkBuild10k builds the snapshot of a 10,000-entity world into a reused HostSnapshot.
func BenchmarkBuild10k(b *testing.B) {
	src := benchWorld(b)
	var snap netmsg.HostSnapshot
	Build(&snap, src, benchTable, Options{})
	b.SetBytes(int64(len(netmsg.AppendHostSnapshot(nil, &snap))))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(&snap, src, benchTable, Options{})
	}
}

// BenchmarkApply10k applies a decoded 10,000-entity snapshot. "fresh": into an empty replica
// each iteration (a join). "same": into a replica that already holds the same state (a
// migration where nothing diverged: every merge is NoChange and no correction is written).
func BenchmarkApply10k(b *testing.B) {
	src := benchWorld(b)
	var snap, got netmsg.HostSnapshot
	Build(&snap, src, benchTable, Options{})
	wire := netmsg.AppendHostSnapshot(nil, &snap)
	if _, err := netmsg.ConsumeHostSnapshot(wire, &got); err != nil {
		b.Fatal(err)
	}
	b.Run("fresh", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for b.Loop() {
			dst := crdt.New(crdt.Config{})
			if _, _, err := Apply(dst, benchTable, &got, dst.Merge, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("same", func(b *testing.B) {
		dst := clone(b, src)
		var corr []byte
		b.SetBytes(int64(len(wire)))
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if _, corr, err = Apply(dst, benchTable, &got, dst.Merge, corr[:0]); err != nil {
				b.Fatal(err)
			}
			if len(corr) != 0 {
				b.Fatal("corrections from an equal replica")
			}
		}
	})
}

// BenchmarkMigrationSnapshot10k is the snapshot of a migration between two nearly equal
// 10,000-entity replicas: 3 of 256 buckets differ, so the host builds and the member applies
// those 3 buckets. Its cost should follow the buckets, not the world.
func BenchmarkMigrationSnapshot10k(b *testing.B) {
	src := benchWorld(b)
	dst := clone(b, src)
	cover := Only(256, 1, 100, 200)
	var snap, got netmsg.HostSnapshot
	var wire, corr []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(&snap, src, benchTable, Options{Cover: cover})
		wire = netmsg.AppendHostSnapshot(wire[:0], &snap)
		if _, err := netmsg.ConsumeHostSnapshot(wire, &got); err != nil {
			b.Fatal(err)
		}
		var err error
		if _, corr, err = Apply(dst, benchTable, &got, dst.Merge, corr[:0]); err != nil {
			b.Fatal(err)
		}
		if len(corr) != 0 {
			b.Fatal("corrections from an equal replica")
		}
	}
	b.SetBytes(int64(len(wire)))
}
