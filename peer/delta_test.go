package peer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// boxUpdates returns, for each DeltaUpdates datagram in dgrams, the seq and the box's update
// data (nil when the datagram does not carry it).
func boxUpdates(t *testing.T, dgrams [][]byte, box Entity) (seqs []uint64, data [][]byte) {
	t.Helper()
	for _, d := range dgrams {
		var du netmsg.DeltaUpdates
		if _, err := netmsg.ConsumeDeltaUpdates(d, &du); err != nil {
			t.Fatalf("host sent a member that takes deltas something else: %v (%x)", err, d)
		}
		for _, u := range du.Updates {
			if Entity(u.NetworkID) == box {
				seqs, data = append(seqs, du.Seq), append(data, bytes.Clone(u.Data))
			}
		}
	}
	return seqs, data
}

func boxValue(t *testing.T, w *World, e Entity) uint32 {
	t.Helper()
	v, _, ok, _ := w.r.Get(e, boxPos)
	if !ok || len(v) != 4 {
		t.Fatalf("no box value: %x", v)
	}
	return binary.LittleEndian.Uint32(v)
}

// tickBox has the host write the box's 4-byte position (a delta-capable raw property), flush,
// and the member ack at its own flush.
func tickBox(n *stepNet, h, m *stepPeer, box Entity, v uint32) {
	n.do(1, func(w *World) { _ = w.Set(box, 0, binary.LittleEndian.AppendUint32(nil, v)) })
	h.flushUpdates()
	n.pump()
	n.clock.add(ackInterval) // a passive member acks at most every ackInterval
	m.flushUpdates()
	n.pump()
}

// Rule "deltas": a member that asks gets DeltaUpdates; a value goes whole until the member
// acknowledged one, then as its difference from the newest acknowledged; a lost datagram is never
// a baseline (the host builds on an older acknowledged value, or sends the value whole once no
// acknowledged value is left in its ring); the member always holds the host's exact value.
func TestRuleDeltas(t *testing.T) {
	n, h, m, app := room12(t)
	got := updatesTo(n)
	if h.host.mems[2].delta == nil {
		t.Fatal("the member's Ack after its Hello did not make it a delta member")
	}

	v := uint32(1_000_000)
	tickBox(n, h, m, app.box, v)
	_, data := boxUpdates(t, got[2], app.box)
	if len(data) != 1 || data[0][0] != 0 || len(data[0]) != 5 {
		t.Fatalf("first update %x, want the value whole (distance 0, 4 bytes)", data)
	}
	for range 3 {
		v += 3
		clear(got)
		tickBox(n, h, m, app.box, v)
		seqs, data := boxUpdates(t, got[2], app.box)
		if len(data) != 1 || !bytes.Equal(data[0], []byte{1, 6}) {
			t.Fatalf("update %x (seq %v), want a difference of +3 from the datagram before (01 06)", data, seqs)
		}
		if got := boxValue(t, m.w, app.box); got != v {
			t.Fatalf("member holds %d, host wrote %d", got, v)
		}
	}

	// One datagram lost: the next builds on the value acknowledged before it.
	n.lose = true
	v += 5
	tickBox(n, h, m, app.box, v)
	n.lose = false
	v += 5
	clear(got)
	tickBox(n, h, m, app.box, v)
	_, data = boxUpdates(t, got[2], app.box)
	if len(data) != 1 || !bytes.Equal(data[0], []byte{2, 20}) {
		t.Fatalf("update after a loss %x, want +10 from the value two datagrams back (02 14)", data)
	}
	if got := boxValue(t, m.w, app.box); got != v {
		t.Fatalf("after a loss the member holds %d, host wrote %d", got, v)
	}

	// Every datagram lost for longer than the ring: the value goes whole again.
	n.lose = true
	for range deltaRingSize {
		v += 1000
		tickBox(n, h, m, app.box, v)
	}
	n.lose = false
	v += 1000
	clear(got)
	tickBox(n, h, m, app.box, v)
	_, data = boxUpdates(t, got[2], app.box)
	if len(data) != 1 || data[0][0] != 0 {
		t.Fatalf("update after %d losses %x, want the value whole", deltaRingSize, data)
	}
	if got := boxValue(t, m.w, app.box); got != v {
		t.Fatalf("after losses the member holds %d, host wrote %d", got, v)
	}
	st := h.publish()
	if st.Deltas < 4 || st.Wholes < 2 {
		t.Errorf("host counted %d deltas and %d whole values, want ≥ 4 and ≥ 2", st.Deltas, st.Wholes)
	}
	if ms := m.publish(); ms.Deltas < 4 || ms.DeltaMissed != 0 {
		t.Errorf("member counted %d deltas, %d missed, want ≥ 4 and 0", ms.Deltas, ms.DeltaMissed)
	}
}

// Rule "deltas, hostile input": an Ack of a datagram never sent is refused (counted, a strike),
// and nothing of it taken; a difference from a value the member never received is dropped
// (counted), leaves the member's value alone, and its datagram is never acknowledged.
func TestRuleDeltasHostile(t *testing.T) {
	n, h, m, app := room12(t)
	tickBox(n, h, m, app.box, 7)
	tickBox(n, h, m, app.box, 8)
	hm := h.host.mems[2]
	next := hm.delta.next

	for _, a := range []netmsg.Ack{
		{Highest: next, Received: 0},    // not sent yet
		{Highest: 1 << 62, Received: 1}, // far beyond
		{Highest: 0, Received: 5},       // bits below seq 0
		{Highest: 1, Received: 1},       // a bit for seq 0
	} {
		before := h.publish().RefusedBy[RefusedAck]
		n.send(2, 1, link.Unreliable, netmsg.AppendAck(nil, &a))
		if after := h.publish().RefusedBy[RefusedAck]; after != before+1 {
			t.Errorf("Ack %+v: refused %d → %d, want one more", a, before, after)
		}
		if hm.delta.isAcked(next) {
			t.Fatalf("Ack %+v acknowledged seq %d, never sent", a, next)
		}
	}

	// The "host" sends a difference from seq 490 in a datagram numbered 500: no datagram 490
	// was ever sent.
	hostVal := boxValue(t, m.w, app.box)
	_, ts := value(h.w, app.box, boxPos)
	forged := netmsg.AppendDeltaUpdates(nil, &netmsg.DeltaUpdates{Seq: 500, EntityUpdates: netmsg.EntityUpdates{
		Time: uint64(ts) + 1, Updates: []netmsg.Update{{NetworkID: uint64(app.box), Width: netmsg.Width8, Mask: 1, Data: []byte{10, 2}}},
	}})
	n.send(1, 2, link.Unreliable, forged)
	if got := boxValue(t, m.w, app.box); got != hostVal {
		t.Errorf("member took a difference from a value it never had: %d, want %d", got, hostVal)
	}
	ms := m.publish()
	if ms.DeltaMissed != 1 {
		t.Errorf("member counted %d missed baselines, want 1", ms.DeltaMissed)
	}
	if a, _ := m.member.delta.pendingAck(); a.Highest == 500 || a.Highest > 500-64 && a.Received>>(a.Highest-500-1)&1 != 0 {
		t.Errorf("member acknowledges the spoiled datagram 500: %+v", a)
	}
	// A difference that leaves what the property holds, and a distance of 0 then a short value:
	// the update is dropped whole.
	for _, data := range [][]byte{{0x01, 0xff, 0xff, 0xff, 0xff, 0x7f}, {0x00, 1, 2}} {
		before := m.publish().Dropped
		// Seq next, distance 1: a difference from the last datagram the host sent, which the
		// member holds.
		bad := netmsg.AppendDeltaUpdates(nil, &netmsg.DeltaUpdates{Seq: next, EntityUpdates: netmsg.EntityUpdates{
			Time: uint64(ts) + 1, Updates: []netmsg.Update{{NetworkID: uint64(app.box), Width: netmsg.Width8, Mask: 1, Data: data}},
		}})
		n.send(1, 2, link.Unreliable, bad)
		if after := m.publish().Dropped; after != before+1 {
			t.Errorf("update data %x: dropped %d → %d, want one more", data, before, after)
		}
		if got := boxValue(t, m.w, app.box); got != hostVal {
			t.Errorf("update data %x changed the member's value to %d", data, got)
		}
	}
}

// Rule "deltas, older member": a member that does not ask (Config.NoDeltas, or an older build)
// gets the shared RunUpdates, byte for byte what every other such member gets.
func TestRuleDeltasNotAsked(t *testing.T) {
	n := newStepNet(t)
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	n.noDeltas = true
	n.join(2, &stepApp{table: stepSchemas()}, 1, 1)
	n.noDeltas = false
	n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	got := updatesTo(n)
	for i := range 3 {
		n.do(1, func(w *World) { _ = w.Set(app.box, 0, []byte{byte(7 + i), 0, 0, 0}) })
		h.flushUpdates()
		n.pump()
		n.peers[3].flushUpdates()
		n.pump()
	}
	if h.host.mems[2].delta != nil || h.host.mems[3].delta == nil {
		t.Fatalf("delta members: 2 %v, 3 %v; want only 3", h.host.mems[2].delta != nil, h.host.mems[3].delta != nil)
	}
	for _, d := range got[2] {
		if netmsg.Type(d[0]) != netmsg.TypeRunUpdates {
			t.Fatalf("member 2 got type %v", netmsg.Type(d[0]))
		}
	}
	if _, data := boxUpdates(t, got[3], app.box); len(data) != 3 {
		t.Fatalf("member 3 got %d box updates, want 3", len(data))
	}
	for idx := PeerIndex(2); idx <= 3; idx++ {
		if v := boxValue(t, n.peers[idx].w, app.box); v != 9 {
			t.Errorf("member %d holds %d", idx, v)
		}
	}
}

// The ack window: the member acknowledges the newest good seq and the 64 before it; the host
// takes acks within its window only, and its ring of values keeps the highest seqs.
func TestDeltaAckWindow(t *testing.T) {
	var x deltaRx
	for _, s := range []uint64{1, 2, 4, 3, 70} {
		x.received(s)
	}
	a, ok := x.pendingAck()
	if !ok || a.Highest != 70 || a.Received != 0 {
		t.Fatalf("ack %+v %v, want 70 alone (1–4 are more than 64 below)", a, ok)
	}
	if _, ok := x.pendingAck(); ok {
		t.Fatal("the same ack twice")
	}
	x.received(72)
	x.spoil(72)
	x.received(72) // a second message of the spoiled datagram
	x.received(71)
	if a, _ := x.pendingAck(); a.Highest != 71 || a.Received != 1 {
		t.Fatalf("ack %+v, want 71 and 70 (72 spoiled)", a)
	}

	d := newDeltaTx(&deltaHist{})
	for range 2000 {
		d.seq()
	}
	if err := d.ack(&netmsg.Ack{Highest: 2000, Received: 1<<63 | 1}); err != nil {
		t.Fatal(err)
	}
	for s, want := range map[uint64]bool{2000: true, 1999: true, 1998: false, 1936: true, 900: false} {
		if d.isAcked(s) != want {
			t.Errorf("seq %d acked %v, want %v", s, !want, want)
		}
	}
	if err := d.ack(&netmsg.Ack{Highest: 500, Received: ^uint64(0)}); err != nil {
		t.Fatal(err) // older than the window: ignored
	}
	if d.isAcked(500) || d.isAcked(1500) {
		t.Error("an ack older than the window was taken")
	}
	for range deltaWindow {
		d.seq()
	}
	if d.isAcked(2000) {
		t.Error("seq 2000's ack outlived the window")
	}

	var r deltaRing
	for _, s := range []uint64{5, 3, 9, 7, 1, 8, 12, 11, 2, 10} {
		r.put(s, []byte{byte(s)})
	}
	// The member keeps the deltaRxRingSize (8) highest.
	for s, want := range map[uint64]bool{12: true, 9: true, 5: true, 3: true, 2: false, 1: false} {
		if _, ok := r.get(s); ok != want {
			t.Errorf("ring holds seq %d: %v, want %v", s, ok, want)
		}
	}
	r.put(13, make([]byte, 40)) // too large to be a baseline
	if _, ok := r.get(13); ok {
		t.Error("the ring kept a value larger than MaxDeltaValue")
	}
}

// The host's shared history: one value per (time, generation); another value at the same time
// takes a new generation, so a member's baseline naming the old one no longer matches; the
// oldest values leave; a difference is computed once per (baseline, value).
func TestDeltaHist(t *testing.T) {
	s, _ := stepSchemas().Lookup(stepSchemaBox)
	p := &s.Properties[0]
	var ph propHist
	g1 := ph.put(10, []byte{1, 0, 0, 0})
	if again := ph.put(10, []byte{1, 0, 0, 0}); again != g1 {
		t.Fatalf("the same value took generation %d, then %d", g1, again)
	}
	g2 := ph.put(11, []byte{5, 0, 0, 0})
	d, ok := ph.delta(p, 10, g1, 11, g2, []byte{5, 0, 0, 0})
	if !ok || !bytes.Equal(d, []byte{8}) {
		t.Fatalf("delta %x %v, want 08 (+4)", d, ok)
	}
	// A tie at time 10 settled the other way: the old generation is gone.
	g1b := ph.put(10, []byte{2, 0, 0, 0})
	if g1b == g1 {
		t.Fatal("another value at the same time kept the generation")
	}
	if _, ok := ph.delta(p, 10, g1, 12, ph.put(12, []byte{6, 0, 0, 0}), []byte{6, 0, 0, 0}); ok {
		t.Error("a delta from a replaced value")
	}
	for ts := crdt.Timestamp(20); ts < 20+histSize; ts++ {
		ph.put(ts, []byte{byte(ts), 0, 0, 0})
	}
	if _, ok := ph.delta(p, 11, g2, 30, ph.put(30, []byte{30, 0, 0, 0}), []byte{30, 0, 0, 0}); ok {
		t.Error("a delta from a value older than the history")
	}
	if g := ph.put(40, make([]byte, schema.MaxDeltaValue+1)); g != 0 {
		t.Error("a value too large to be a baseline was kept")
	}
}
