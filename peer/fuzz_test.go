package peer

import (
	"math"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// FuzzHostLink feeds a fuzzed byte stream, as payloads on a member's link, to a host in a
// steppable room: the host never panics, its loop keeps serving (an honest member's write still
// arrives), its reassembly stays within hostReassemblyLimit and its clock keeps its headroom.
// The first byte of the input picks the channel; the rest is split into payloads at 0xff 0xfe.
func FuzzHostLink(f *testing.F) {
	avatar := crdt.NewEntity(FirstSpawnNumber+1, 0)
	seeds := [][]byte{
		forgedUpdate(avatar, math.MaxUint32, 1),
		netmsg.AppendFragment(nil, &netmsg.Fragment{MessageID: 1, TotalLength: 1 << 30, Chunk: []byte{1, 2, 3}}),
		netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: crdt.AppendMessage(nil, &crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(600, 0xffff)})}),
		netmsg.AppendDigest(nil, &netmsg.Digest{Term: 1, Digests: make([]uint64, 3)}),
		netmsg.AppendHello(nil, &netmsg.Hello{Term: 0, PeerIndex: 2}),
	}
	for i, s := range seeds {
		f.Add(append([]byte{byte(i)}, s...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		n, h, m, _ := room12(t)
		n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
		ch := link.Reliable
		if in[0]&1 == 1 {
			ch = link.Unreliable
		}
		clock := h.w.r.Clock()
		for _, p := range splitPayloads(in[1:]) {
			if h.remotes[2] == nil {
				break // dropped: the right end for a hostile stream
			}
			n.send(2, 1, ch, p)
			if r := h.remotes[2]; r != nil && r.reasm.Buffered() > hostReassemblyLimit {
				t.Fatalf("host buffers %d bytes of a member's fragments", r.reasm.Buffered())
			}
		}
		if got := h.w.r.Clock(); got > clock+2*maxStampSkew+crdt.Timestamp(len(in)) { // a step per message at most, beyond the skew
			t.Fatalf("host clock %d → %d", clock, got)
		}
		// The loop still serves member 3.
		n.do(3, func(w *World) {
			a, _ := w.AvatarOf(3)
			_ = w.Set(a, 0, []byte{42, 0, 0, 0})
		})
		n.peers[3].flushUpdates()
		n.pump()
		a3, _ := h.w.AvatarOf(3)
		if v, _ := value(h.w, a3, avatarPos); v != 42 {
			t.Fatalf("host stopped serving: member 3's write not taken (%d)", v)
		}
		_ = m
	})
}

// splitPayloads splits b at each 0xff 0xfe pair.
func splitPayloads(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i+1 < len(b); i++ {
		if b[i] == 0xff && b[i+1] == 0xfe {
			if i > start {
				out = append(out, b[start:i])
			}
			start = i + 2
			i++
		}
	}
	if start < len(b) {
		out = append(out, b[start:])
	}
	return out
}
