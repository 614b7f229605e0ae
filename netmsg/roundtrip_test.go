package netmsg

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// gen draws random, valid message values from a seeded source.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g gen) u64() uint64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return maxU64
	default:
		return g.r.Uint64() >> g.r.IntN(64)
	}
}

func (g gen) u32() uint32 { return uint32(g.u64()) }

func (g gen) bytes(max int) []byte {
	b := make([]byte, g.r.IntN(max+1))
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

var idRunes = []string{"a", "z", "@", ":", ".", "ë", "例", "え", "🦊", "😀", "0"}

func (g gen) peerID() string {
	var sb strings.Builder
	for n := g.r.IntN(40); n > 0 && sb.Len() < MaxPeerIDLen-4; n-- {
		sb.WriteString(idRunes[g.r.IntN(len(idRunes))])
	}
	if g.r.IntN(10) == 0 {
		return idMaxEmoji
	}
	return sb.String()
}

func (g gen) peers() []PeerInfo {
	p := make([]PeerInfo, g.r.IntN(5))
	for i := range p {
		p[i] = PeerInfo{g.u64(), g.peerID()}
	}
	return p
}

func (g gen) spawns() []Spawn {
	s := make([]Spawn, g.r.IntN(6))
	for i := range s {
		s[i] = Spawn{g.u64(), g.u32(), g.bytes(20), g.bytes(40)}
	}
	return s
}

func (g gen) update() Update {
	w := Width(g.r.IntN(3))
	mask := g.r.Uint32()
	if w != Width32 {
		mask &= 1<<w.Bits() - 1
	}
	n := 40
	if g.r.IntN(20) == 0 {
		n = MaxUpdateData
	}
	return Update{g.u64(), w, mask, g.bytes(n)}
}

func (g gen) rpcs() []RPC {
	s := make([]RPC, g.r.IntN(4))
	for i := range s {
		s[i] = RPC{g.u32(), g.bytes(30)}
	}
	return s
}

func (g gen) message() any {
	switch g.r.IntN(13) {
	case 0:
		return HostSnapshot{g.u64(), g.u64(), g.u64(), g.peers(), g.spawns(), g.bytes(50)}
	case 1:
		return PeerEntered{PeerInfo{g.u64(), g.peerID()}}
	case 2:
		return PeerExited{g.u64()}
	case 3:
		m := HostCommands{Spawns: g.spawns(), RPCs: g.rpcs()}
		for range g.r.IntN(4) {
			m.Despawns = append(m.Despawns, Despawn{g.u64()})
			m.AuthorityTransfers = append(m.AuthorityTransfers, AuthorityTransfer{g.u64(), g.u64()})
			m.Actions = append(m.Actions, Action{g.u32(), g.bytes(10)})
		}
		return m
	case 4:
		return PeerCommands{g.rpcs()}
	case 5:
		m := EntityUpdates{Time: g.u64()}
		for range g.r.IntN(8) {
			m.Updates = append(m.Updates, g.update())
		}
		return m
	case 6:
		chunk := g.bytes(60)
		off := uint32(g.r.IntN(1000))
		return Fragment{g.u32(), off + uint32(len(chunk)) + uint32(g.r.IntN(3)), off, chunk}
	case 7:
		return CrdtBatch{g.u64(), g.bytes(80)}
	case 8:
		return Ping{g.u64(), g.u64()}
	case 9:
		return Pong{g.u64(), g.u64()}
	case 10:
		return Close{uint16(g.r.Uint32()), g.peerID()}
	case 11:
		return Hello{g.u64(), g.u64(), g.u64()}
	default:
		return extMsg{Type(12 + g.r.IntN(244)), g.bytes(30)}
	}
}

// TestRoundTrip encodes random messages, decodes them into fresh and into
// reused values, and checks both the fields and the re-encoded bytes.
func TestRoundTrip(t *testing.T) {
	g := newGen(1)
	reused := map[reflect.Type]reflect.Value{}
	for i := range 3000 {
		v := g.message()
		c := codecOf(v)
		wantJSON, b, err := c.fields(v)
		if err != nil {
			t.Fatal(err)
		}
		// Trailing bytes must not be consumed.
		in := append(bytes.Clone(b), 0xee, 0xee)
		gotJSON, n, err := c.decode(in)
		if err != nil || n != len(b) {
			t.Fatalf("#%d %T: n=%d of %d, err=%v", i, v, n, len(b), err)
		}
		if string(gotJSON) != string(wantJSON) {
			t.Fatalf("#%d %T:\n got %s\nwant %s", i, v, gotJSON, wantJSON)
		}
		// Decode into a reused, dirty value with the typed decoder.
		rt := reflect.TypeOf(v)
		dst, ok := reused[rt]
		if !ok {
			dst = reflect.New(rt)
			reused[rt] = dst
		}
		again := decodeInto(t, b, dst.Interface())
		if !bytes.Equal(again, b) {
			t.Fatalf("#%d %T: reused decode re-encodes to\n%x\nwant\n%x", i, v, again, b)
		}
	}
}

// decodeInto decodes b into dst (a pointer to a message) and re-encodes it.
func decodeInto(t *testing.T, b []byte, dst any) []byte {
	t.Helper()
	var err error
	var out []byte
	switch m := dst.(type) {
	case *HostSnapshot:
		_, err = ConsumeHostSnapshot(b, m)
		out = AppendHostSnapshot(nil, m)
	case *PeerEntered:
		_, err = ConsumePeerEntered(b, m)
		out = AppendPeerEntered(nil, m)
	case *PeerExited:
		_, err = ConsumePeerExited(b, m)
		out = AppendPeerExited(nil, m)
	case *HostCommands:
		_, err = ConsumeHostCommands(b, m)
		out = AppendHostCommands(nil, m)
	case *PeerCommands:
		_, err = ConsumePeerCommands(b, m)
		out = AppendPeerCommands(nil, m)
	case *EntityUpdates:
		_, err = ConsumeEntityUpdates(b, m)
		out = AppendEntityUpdates(nil, m)
	case *Fragment:
		_, err = ConsumeFragment(b, m)
		out = AppendFragment(nil, m)
	case *CrdtBatch:
		_, err = ConsumeCrdtBatch(b, m)
		out = AppendCrdtBatch(nil, m)
	case *Ping:
		_, err = ConsumePing(b, m)
		out = AppendPing(nil, m)
	case *Pong:
		_, err = ConsumePong(b, m)
		out = AppendPong(nil, m)
	case *Close:
		_, err = ConsumeClose(b, m)
		out = AppendClose(nil, m)
	case *Hello:
		_, err = ConsumeHello(b, m)
		out = AppendHello(nil, m)
	case *extMsg:
		var n int
		m.Type, m.Body, n, err = ConsumeExt(b)
		_ = n
		out = AppendExt(nil, m.Type, m.Body)
	default:
		t.Fatalf("no decoder for %T", dst)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDecodedSlicesCannotOverwriteInput checks that appending to a decoded
// byte slice never writes into the bytes after it.
func TestDecodedSlicesCannotOverwriteInput(t *testing.T) {
	b := AppendEntityUpdates(nil, &EntityUpdates{Updates: []Update{{1, Width8, 1, []byte{1}}, {2, Width8, 1, []byte{2}}}})
	before := bytes.Clone(b)
	var m EntityUpdates
	if _, err := ConsumeEntityUpdates(b, &m); err != nil {
		t.Fatal(err)
	}
	_ = append(m.Updates[0].Data, 0xff, 0xff, 0xff)
	if !bytes.Equal(b, before) {
		t.Fatalf("append to decoded data changed the input: %x", b)
	}
}

func TestStartCrdtBatchInPlace(t *testing.T) {
	b, mark := StartCrdtBatch([]byte{0xaa}, 9)
	b = append(b, adr117DeleteEntity(600)...)
	b = append(b, adr117DeleteEntity(601)...)
	b = FinishExt(b, mark)
	var m CrdtBatch
	n, err := ConsumeCrdtBatch(b[1:], &m)
	if err != nil || n != len(b)-1 || m.Term != 9 || !bytes.Equal(m.Messages, append(adr117DeleteEntity(600), adr117DeleteEntity(601)...)) {
		t.Fatalf("n=%d err=%v m=%+v", n, err, m)
	}
	if want := AppendCrdtBatch([]byte{0xaa}, &m); !bytes.Equal(b, want) {
		t.Errorf("in-place batch %x, AppendCrdtBatch %x", b, want)
	}
}

func Example() {
	// A host relays two updates stamped differently, back to back in one
	// datagram, then a peer reads them.
	var w EntityUpdatesWriter
	buf := make([]byte, 0, MaxDatagram)
	w.Reset(buf, 41, MaxDatagram)
	w.Add(&Update{NetworkID: 512, Width: Width8, Mask: 0b01, Data: []byte{0, 0, 0x80, 0x3f}})
	w.Reset(w.Bytes(), 42, MaxDatagram)
	w.Add(&Update{NetworkID: 513, Width: Width16, Mask: 0x100, Data: []byte{7}})
	payload := w.Bytes()

	if err := CheckDatagram(payload); err != nil {
		panic(err)
	}
	var eu EntityUpdates
	r := NewReader(payload)
	for r.More() {
		m, err := r.Next()
		if err != nil {
			panic(err) // a *ProtocolError: close the peer
		}
		if m.Type != TypeEntityUpdates {
			continue
		}
		if _, err := ConsumeEntityUpdates(m.Raw, &eu); err != nil {
			panic(err)
		}
		for _, u := range eu.Updates {
			fmt.Printf("time %d entity %d mask %v:%#x data %x\n", eu.Time, u.NetworkID, u.Width, u.Mask, u.Data)
		}
	}
	// Output:
	// time 41 entity 512 mask u8:0x1 data 0000803f
	// time 42 entity 513 mask u16:0x100 data 07
}
