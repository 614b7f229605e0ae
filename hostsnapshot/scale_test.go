package hostsnapshot

import (
	"fmt"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
)

// sendFragmented cuts payload into Fragment messages of at most MaxReliableMessage bytes,
// decodes each one and reassembles them, as the reliable channel would carry them.
func sendFragmented(t testing.TB, payload []byte, id uint32) (out []byte, fragments int) {
	t.Helper()
	f := netmsg.NewFragmenter(payload, id, netmsg.MaxReliableMessage)
	re := netmsg.NewReassembler(netmsg.Config{})
	buf := make([]byte, 0, netmsg.MaxReliableMessage)
	for {
		msg, ok := f.Next(buf[:0])
		if !ok {
			break
		}
		fragments++
		if err := netmsg.CheckReliable(msg); err != nil {
			t.Fatal(err)
		}
		var fr netmsg.Fragment
		n, err := netmsg.ConsumeFragment(msg, &fr)
		if err != nil || n != len(msg) {
			t.Fatalf("fragment %d: %d of %d bytes, %v", fragments, n, len(msg), err)
		}
		p, done, err := re.Push(&fr)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			out = p
		}
	}
	if want := netmsg.FragmentCount(len(payload), netmsg.MaxReliableMessage); fragments != want {
		t.Fatalf("%d fragments, FragmentCount says %d", fragments, want)
	}
	if out == nil {
		t.Fatal("the reassembler never completed the payload")
	}
	return out, fragments
}

// TestScaleFragmented moves a whole room through Build, the HostSnapshot codec, fragmentation
// into 16 KiB reliable messages, reassembly, decoding and Apply. The full case fills the 16-bit
// entity number space: 65,535 entities (numbers 0..65534, entity 0 being the room), each with
// three properties.
func TestScaleFragmented(t *testing.T) {
	sizes := []int{10_000, 65_535}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			numbers := numberRange(512, 512+n)
			if n == 65_535 {
				numbers = numberRange(0, n)
			}
			src := bodyWorld(t, numbers, uint64(n))
			src.ObserveClock(5000)
			var s netmsg.HostSnapshot
			Build(&s, src, benchTable, Options{Term: 3, HostPeerIndex: 1, LocalPeerIndex: 2})
			if len(s.Spawns) != n {
				t.Fatalf("%d spawns, want %d", len(s.Spawns), n)
			}
			wire := netmsg.AppendHostSnapshot(nil, &s)
			payload, frags := sendFragmented(t, wire, 42)
			t.Logf("%d entities: snapshot %d bytes (%.1f per entity), %d fragments", n, len(wire), float64(len(wire))/float64(n), frags)

			got := decode(t, payload)
			dst := crdt.New(crdt.Config{})
			_, corr, err := Apply(dst, benchTable, got, dst.Merge, nil)
			if err != nil {
				t.Fatal(err)
			}
			if dst.Hash() != src.Hash() {
				t.Fatalf("hash %016x, want %016x", dst.Hash(), src.Hash())
			}
			if len(corr) != 0 || dst.Clock() != 5000 || dst.LiveEntities() != n {
				t.Fatalf("%d correction bytes, clock %d, %d live entities", len(corr), dst.Clock(), dst.LiveEntities())
			}
		})
	}
}
