package netmsg

import (
	"encoding/binary"
	"math"
	"strings"
)

// The definitions below generate ../testdata/netmsg (go test ./netmsg -run
// TestGolden -update). The committed files, not these definitions, are the
// contract: TestGolden checks the files both ways.

type namedValue struct {
	name  string
	value any
}

const maxU64 = math.MaxUint64

// entity is an ADR-117 entity (number | version<<16) as a networkId.
func entity(number, version uint16) uint64 { return uint64(version)<<16 | uint64(number) }

// runOf returns n updates of consecutive entities from 512, one mask and data length.
func runOf(n int) []Update {
	us := make([]Update, n)
	for i := range us {
		us[i] = Update{entity(512+uint16(i), 0), Width8, 0x03, pattern(2, byte(i))}
	}
	return us
}

// pattern returns n deterministic bytes.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

var (
	idASCII    = "@alice:example.org"
	idHost     = "@host:example.org"
	idZoe      = "@zoë:例え.org"
	idEmoji    = "@🦊:matrix.org"
	idMaxASCII = "@" + strings.Repeat("a", 249) + ":x.org"                       // 256 bytes
	idMaxCJK   = strings.Repeat("例", 85) + "a"                                   // 255 + 1 bytes
	idMaxEmoji = strings.Repeat("🦊", 64)                                         // 256 bytes
	f32one     = []byte{0x00, 0x00, 0x80, 0x3f}                                  // float32 1.0
	putPos     = []byte{0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40} // 1, 2, 3
)

// adr117Put is an @dcl/ecs PUT_COMPONENT message.
func adr117Put(ent, component, timestamp uint32, data []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(24+len(data)))
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, ent)
	b = binary.LittleEndian.AppendUint32(b, component)
	b = binary.LittleEndian.AppendUint32(b, timestamp)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// adr117DeleteEntity is an @dcl/ecs DELETE_ENTITY message.
func adr117DeleteEntity(ent uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 12)
	b = binary.LittleEndian.AppendUint32(b, 3)
	return binary.LittleEndian.AppendUint32(b, ent)
}

// fullDatagram returns EntityUpdates filling exactly MaxDatagram bytes.
func fullDatagram() EntityUpdates {
	m := EntityUpdates{Time: 100_000}
	n := entityUpdatesHeaderSize
	for i := 0; i < 40; i++ {
		u := Update{NetworkID: entity(uint16(600+i), 1), Width: Width8, Mask: 0x0f, Data: pattern(16, byte(i))}
		m.Updates = append(m.Updates, u)
		n += SizeUpdate(&u)
	}
	last := MaxDatagram - n - updateHeaderSize - 1
	m.Updates = append(m.Updates, Update{NetworkID: entity(700, 2), Width: Width8, Mask: 0xff, Data: pattern(last, 9)})
	return m
}

func messageVectors() []namedValue {
	spawnA := Spawn{NetworkID: entity(512, 1), SchemaID: 1, CreationData: []byte{0x01, 0x02}, UpdateData: putPos}
	spawnB := Spawn{NetworkID: entity(513, 0), SchemaID: 2, CreationData: []byte{}, UpdateData: f32one}
	return []namedValue{
		// HostSnapshot
		{"empty", HostSnapshot{}},
		{"two peers, one spawn, host state", HostSnapshot{
			HostTime: 42, LocalPeerIndex: 2, HostPeerIndex: 1,
			Peers:     []PeerInfo{{1, idHost}, {2, idASCII}},
			Spawns:    []Spawn{spawnA},
			HostState: []byte{1, 2, 3, 4, 5},
		}},
		{"unicode, emoji and empty peer ids", HostSnapshot{
			HostTime: 7, LocalPeerIndex: 3, HostPeerIndex: 1,
			Peers: []PeerInfo{{1, idZoe}, {2, idEmoji}, {3, ""}},
		}},
		{"256-byte peer ids", HostSnapshot{
			HostTime: 1, LocalPeerIndex: 1, HostPeerIndex: 0,
			Peers: []PeerInfo{{0, idMaxASCII}, {1, idMaxCJK}, {2, idMaxEmoji}},
		}},
		{"spawns with empty data", HostSnapshot{
			HostTime: 9, LocalPeerIndex: 4, HostPeerIndex: 1,
			Spawns: []Spawn{
				{NetworkID: entity(512, 0), SchemaID: 0},
				{NetworkID: entity(514, 3), SchemaID: 5, CreationData: []byte{0xaa}},
				{NetworkID: entity(515, 0), SchemaID: 6, UpdateData: []byte{0xbb, 0xcc}},
				spawnB,
			},
		}},
		{"maximum values", HostSnapshot{
			HostTime: maxU64, LocalPeerIndex: maxU64, HostPeerIndex: maxU64,
			Peers:     []PeerInfo{{maxU64, idASCII}},
			Spawns:    []Spawn{{NetworkID: maxU64, SchemaID: math.MaxUint32, CreationData: []byte{0xff}, UpdateData: []byte{0xff, 0xff}}},
			HostState: []byte{0xff},
		}},

		// PeerEntered
		{"ascii peer id", PeerEntered{PeerInfo{3, idASCII}}},
		{"unicode peer id", PeerEntered{PeerInfo{4, idZoe}}},
		{"emoji peer id", PeerEntered{PeerInfo{5, idEmoji}}},
		{"empty peer id", PeerEntered{PeerInfo{6, ""}}},
		{"256-byte ascii peer id", PeerEntered{PeerInfo{7, idMaxASCII}}},
		{"256-byte multi-byte peer id", PeerEntered{PeerInfo{8, idMaxCJK}}},
		{"maximum peer index", PeerEntered{PeerInfo{maxU64, idHost}}},

		// PeerExited
		{"peer 0", PeerExited{0}},
		{"peer 1", PeerExited{1}},
		{"peer 258", PeerExited{258}},
		{"maximum peer index", PeerExited{maxU64}},

		// HostCommands
		{"empty", HostCommands{}},
		{"one of each", HostCommands{
			Spawns:             []Spawn{spawnA},
			Despawns:           []Despawn{{entity(520, 2)}},
			AuthorityTransfers: []AuthorityTransfer{{entity(512, 1), 2}},
			RPCs:               []RPC{{Type: 1, Data: []byte("hi")}},
			Actions:            []Action{{Type: 2, Data: []byte{0x10, 0x20, 0x30}}},
		}},
		{"several, empty data", HostCommands{
			Spawns:             []Spawn{spawnA, spawnB},
			Despawns:           []Despawn{{entity(530, 0)}, {entity(531, 7)}, {entity(532, 65535)}},
			AuthorityTransfers: []AuthorityTransfer{{entity(512, 1), 0}, {entity(513, 0), 3}},
			RPCs:               []RPC{{Type: 7}, {Type: 8, Data: []byte{1}}},
			Actions:            []Action{{Type: 9}},
		}},
		{"only actions", HostCommands{Actions: []Action{{Type: 100, Data: []byte("jump")}}}},
		{"maximum values", HostCommands{
			Spawns:             []Spawn{{NetworkID: maxU64, SchemaID: math.MaxUint32}},
			Despawns:           []Despawn{{maxU64}},
			AuthorityTransfers: []AuthorityTransfer{{maxU64, maxU64}},
			RPCs:               []RPC{{Type: math.MaxUint32, Data: []byte{0xff}}},
			Actions:            []Action{{Type: math.MaxUint32, Data: []byte{0xff}}},
		}},

		// PeerCommands
		{"empty", PeerCommands{}},
		{"one rpc", PeerCommands{RPCs: []RPC{{Type: 1, Data: []byte("hello")}}}},
		{"several rpcs, empty data", PeerCommands{RPCs: []RPC{{Type: 2}, {Type: 3, Data: []byte{0}}, {Type: 4}}}},
		{"maximum type", PeerCommands{RPCs: []RPC{{Type: math.MaxUint32, Data: pattern(5, 1)}}}},

		// EntityUpdates
		{"empty", EntityUpdates{Time: 1}},
		{"1 property, u8 mask", EntityUpdates{Time: 10, Updates: []Update{{entity(512, 1), Width8, 0x01, f32one}}}},
		{"8 properties, u8 mask", EntityUpdates{Time: 11, Updates: []Update{{entity(512, 1), Width8, 0xff, pattern(8, 1)}}}},
		{"9 properties, u16 mask", EntityUpdates{Time: 12, Updates: []Update{{entity(512, 1), Width16, 0x01ff, pattern(9, 2)}}}},
		{"16 properties, u16 mask", EntityUpdates{Time: 13, Updates: []Update{{entity(512, 1), Width16, 0xffff, pattern(16, 3)}}}},
		{"17 properties, u32 mask", EntityUpdates{Time: 14, Updates: []Update{{entity(512, 1), Width32, 0x0001ffff, pattern(17, 4)}}}},
		{"32 properties, u32 mask", EntityUpdates{Time: 15, Updates: []Update{{entity(512, 1), Width32, 0xffffffff, pattern(32, 5)}}}},
		{"sparse masks", EntityUpdates{Time: 16, Updates: []Update{
			{entity(600, 0), Width8, 0x80, f32one},
			{entity(601, 0), Width16, 0x8000, f32one},
			{entity(602, 0), Width32, 0x80000000, f32one},
		}}},
		{"zero mask, empty data", EntityUpdates{Time: 17, Updates: []Update{{entity(512, 1), Width8, 0, nil}, {entity(513, 1), Width32, 0, nil}}}},
		{"maximum data length", EntityUpdates{Time: 18, Updates: []Update{{entity(512, 1), Width8, 0x03, pattern(MaxUpdateData, 6)}}}},
		{"maximum values", EntityUpdates{Time: maxU64, Updates: []Update{{maxU64, Width32, math.MaxUint32, []byte{0xff}}}}},
		{"full datagram (MaxDatagram, 1156 bytes)", fullDatagram()},

		// Fragment
		{"first of three", Fragment{MessageID: 1, TotalLength: 20, Offset: 0, Chunk: pattern(8, 1)}},
		{"middle of three", Fragment{MessageID: 1, TotalLength: 20, Offset: 8, Chunk: pattern(8, 9)}},
		{"last of three", Fragment{MessageID: 1, TotalLength: 20, Offset: 16, Chunk: pattern(4, 17)}},
		{"whole payload in one", Fragment{MessageID: 2, TotalLength: 3, Offset: 0, Chunk: []byte{0x08, 0x10, 0x00}}},
		{"empty payload", Fragment{MessageID: 3, TotalLength: 0, Offset: 0, Chunk: nil}},
		{"maximum values", Fragment{MessageID: math.MaxUint32, TotalLength: math.MaxUint32, Offset: math.MaxUint32 - 3, Chunk: []byte{1, 2, 3}}},

		// CrdtBatch
		{"empty", CrdtBatch{Term: 0}},
		{"put component and delete entity", CrdtBatch{Term: 3, Messages: append(
			adr117Put(uint32(entity(512, 1)), 1050, 7, f32one), adr117DeleteEntity(uint32(entity(513, 0)))...)}},
		{"maximum term", CrdtBatch{Term: maxU64, Messages: []byte{0xff}}},

		// Ping
		{"zero", Ping{}},
		{"typical", Ping{Nonce: 17, SendTime: 1_500_000_000}},
		{"maximum values", Ping{Nonce: maxU64, SendTime: maxU64}},

		// Pong
		{"zero", Pong{}},
		{"typical", Pong{Nonce: 17, EchoTime: 1_500_000_000}},
		{"maximum values", Pong{Nonce: maxU64, EchoTime: maxU64}},

		// Close
		{"no reason", Close{Code: 0}},
		{"ascii reason", Close{Code: 1, Reason: "term superseded"}},
		{"unicode reason", Close{Code: 2, Reason: "schéma différent: 例え 🦊"}},
		{"256-byte reason", Close{Code: 3, Reason: strings.Repeat("r", MaxCloseReason)}},
		{"maximum code", Close{Code: math.MaxUint16, Reason: "x"}},

		// Hello
		{"zero", Hello{}},
		{"typical", Hello{Term: 4, PeerIndex: 2, SchemaFingerprint: 0x0123456789abcdef}},
		{"maximum values", Hello{Term: maxU64, PeerIndex: maxU64, SchemaFingerprint: maxU64}},

		// Relay
		{"to every member, empty data", Relay{Peer: 0, AppType: 128}},
		{"from peer 7, type 200", Relay{Peer: 7, AppType: 200, Data: []byte("typing…")}},
		{"maximum peer, type 255", Relay{Peer: maxU64, AppType: 255, Data: []byte{0, 1, 2}}},

		// Actions
		{"none", Actions{}},
		{"one input", Actions{Actions: []Action{{Type: 1, Data: []byte{0x10, 0x20}}}}},
		{"two, one empty", Actions{Actions: []Action{{Type: 7}, {Type: math.MaxUint32, Data: []byte("jump")}}}},

		// Forget
		{"none", Forget{NetworkIDs: []uint64{}}},
		{"two entities", Forget{NetworkIDs: []uint64{entity(600, 0), entity(1234, 7)}}},

		// PackedUpdates
		{"one update, time 0", packedUpdates{Time: 0, Updates: []Update{{entity(512, 0), Width8, 0x01, f32one}}}},
		{"u16 and u32 masks, a large time", packedUpdates{Time: 1 << 31, Updates: []Update{
			{entity(600, 2), Width16, 0x8001, pattern(3, 7)},
			{entity(65535, 65535), Width32, 0xffffffff, pattern(2, 8)},
		}}},
		{"a long value", packedUpdates{Time: 300, Updates: []Update{{entity(1000, 0), Width8, 0x03, pattern(200, 9)}}}},

		// RunUpdates: consecutive ids of one mask and data length share a run (its count one byte,
		// at most MaxRun); a gap in the ids, another mask or another length starts a new one.
		{"one update, time 0", runUpdates{Time: 0, Updates: []Update{{entity(512, 0), Width8, 0x01, f32one}}}},
		{"a run of three, then a gap, a new mask and a new length", runUpdates{Time: 300, Updates: []Update{
			{entity(512, 0), Width8, 0x03, pattern(4, 1)},
			{entity(513, 0), Width8, 0x03, pattern(4, 2)},
			{entity(514, 0), Width8, 0x03, pattern(4, 3)},
			{entity(516, 0), Width8, 0x03, pattern(4, 4)},
			{entity(517, 0), Width8, 0x01, pattern(4, 5)},
			{entity(518, 0), Width8, 0x01, pattern(2, 6)},
		}}},
		{"u16 and u32 masks, empty data, the last id", runUpdates{Time: 1 << 31, Updates: []Update{
			{entity(600, 2), Width16, 0x8001, pattern(3, 7)},
			{entity(601, 2), Width32, 0x8001, pattern(3, 8)},
			{entity(602, 2), Width32, 0, nil},
			{entity(603, 2), Width32, 0, nil},
			{maxU64, Width8, 0x01, pattern(1, 9)},
		}}},
		{"a run of 130: 127, then 3", runUpdates{Time: 7, Updates: runOf(130)}},

		// DeltaUpdates
		{"seq 1, one update", DeltaUpdates{Seq: 1, EntityUpdates: EntityUpdates{Time: 0, Updates: []Update{{entity(512, 0), Width8, 0x01, []byte{0x00, 1, 2, 3, 4, 5, 6}}}}}},
		{"a delta against seq 298, u16 mask", DeltaUpdates{Seq: 300, EntityUpdates: EntityUpdates{Time: 1 << 20, Updates: []Update{
			{entity(600, 2), Width16, 0x0003, []byte{0x02, 0x80, 0x04, 0x01, 0x02, 0x80, 0xc2, 0xd7, 0x2f}},
			{entity(601, 0), Width8, 0x00, nil},
		}}}},
		{"no updates, maximum seq", DeltaUpdates{Seq: maxU64, EntityUpdates: EntityUpdates{Time: 7}}},

		// Ack
		{"capability, nothing received", Ack{}},
		{"seq 300 and the two before", Ack{Highest: 300, Received: 0x3}},
		{"maximum", Ack{Highest: maxU64, Received: maxU64}},

		// Frames of types this build does not define.
		// Stamp and Digest bodies are decoded by the session layer (package
		// peer); netmsg sees their frames only.
		{"Stamp (12) frame", extMsg{TypeStamp, bld{}.u64(1234)}},
		{"Digest (13) frame, 2 buckets", extMsg{TypeDigest, bld{}.u64(3).u32(77).u16(2).u64(0x0123456789abcdef).u64(maxU64)}},
		{"unknown extension 100", extMsg{100, []byte{1, 2, 3}}},
		{"unknown extension 127, empty body", extMsg{127, nil}},
		{"application 128", extMsg{128, []byte("app")}},
		{"application 200, one byte", extMsg{200, []byte{0}}},
		{"application 255, empty body", extMsg{255, nil}},
	}
}

type payloadVector struct {
	name   string
	values []any
}

func payloadVectors() []payloadVector {
	return []payloadVector{
		{"relayed updates with two stamps", []any{
			EntityUpdates{Time: 50, Updates: []Update{{entity(512, 1), Width8, 0x01, f32one}}},
			EntityUpdates{Time: 48, Updates: []Update{{entity(700, 0), Width16, 0x0101, pattern(8, 3)}, {entity(701, 0), Width8, 0x02, f32one}}},
		}},
		{"join: hello, snapshot, commands", []any{
			Hello{Term: 2, PeerIndex: 1, SchemaFingerprint: 99},
			HostSnapshot{HostTime: 5, LocalPeerIndex: 3, HostPeerIndex: 1, Peers: []PeerInfo{{1, idHost}, {3, idZoe}}},
			HostCommands{Despawns: []Despawn{{entity(512, 0)}}},
			PeerEntered{PeerInfo{4, idEmoji}},
			PeerExited{2},
		}},
		{"every extension and application frames", []any{
			Ping{Nonce: 1, SendTime: 2},
			Pong{Nonce: 3, EchoTime: 4},
			extMsg{200, []byte("app")},
			extMsg{42, []byte{0xde, 0xad}},
			CrdtBatch{Term: 1, Messages: adr117DeleteEntity(uint32(entity(600, 1)))},
			Fragment{MessageID: 9, TotalLength: 2, Offset: 0, Chunk: []byte{0x08, 0x00}},
			PeerCommands{RPCs: []RPC{{Type: 5, Data: []byte{1}}}},
			Close{Code: 1, Reason: "bye"},
		}},
		{"empty messages back to back", []any{
			EntityUpdates{},
			HostCommands{},
			PeerCommands{},
			extMsg{255, nil},
			HostSnapshot{},
		}},
	}
}

type invalidDef struct {
	name  string
	check string
	b     []byte
	err   string
}

// bld builds byte strings for invalid vectors. Every method returns a new
// array, so a shared prefix is never overwritten.
type bld []byte

func (b bld) grow() []byte     { return b[:len(b):len(b)] }
func (b bld) u16(v uint16) bld { return binary.LittleEndian.AppendUint16(b.grow(), v) }
func (b bld) u32(v uint32) bld { return binary.LittleEndian.AppendUint32(b.grow(), v) }
func (b bld) u64(v uint64) bld { return binary.LittleEndian.AppendUint64(b.grow(), v) }
func (b bld) raw(v ...byte) bld {
	return append(b.grow(), v...)
}
func (b bld) str(s string) bld { return append(b.grow(), s...) }

func invalidVectors() []invalidDef {
	snapHead := bld{0}.u64(1).u64(2).u64(1) // through hostPeerIndex
	peerEntered := func(n uint32, id string) []byte { return bld{1}.u64(3).u32(n).str(id) }
	upd := bld{5}.u64(10).u32(1).u64(entity(512, 1))
	ping := AppendPing(nil, &Ping{Nonce: 1, SendTime: 2})
	big := func(n int) []byte {
		b := bld{5}.u64(1).u32(0)
		return append(b, make([]byte, n-len(b))...)
	}
	return []invalidDef{
		{"HostSnapshot type only", "", bld{0}, "short_buffer"},
		{"PeerEntered type only", "", bld{1}, "short_buffer"},
		{"PeerExited type only", "", bld{2}, "short_buffer"},
		{"HostCommands type only", "", bld{3}, "short_buffer"},
		{"PeerCommands type only", "", bld{4}, "short_buffer"},
		{"EntityUpdates type only", "", bld{5}, "short_buffer"},
		{"extension type only", "", bld{8}, "short_buffer"},
		{"Relay of a non-application type", "", bld{14}.u32(9).u64(1).raw(127), "wrong_type"},
		{"Relay body shorter than its header", "", bld{14}.u32(8).u64(1), "body_length"},
		{"Actions count beyond the body", "", bld{15}.u32(4).u32(2), "short_buffer"},
		{"Forget count beyond the body", "", bld{16}.u32(4).u32(1), "short_buffer"},
		{"Forget bytes after the last id", "", bld{16}.u32(13).u32(1).u64(600).raw(1), "body_length"},
		{"PackedUpdates without a time", "", bld{17}.u32(0), "body_length"},
		{"PackedUpdates time not in its shortest form", "", bld{17}.u32(2).raw(0x80, 0x00), "body_length"},
		{"PackedUpdates width code 3", "", bld{17}.u32(4).raw(1, 0x80, 0x04, 0x03), "invalid_mask_width"},
		{"PackedUpdates data past the body", "", bld{17}.u32(5).raw(1, 0x80, 0x04, 0x10, 0x01), "short_buffer"},
		{"RunUpdates without a time", "", bld{20}.u32(0), "body_length"},
		{"RunUpdates run of no updates", "", bld{20}.u32(6).raw(1, 0x80, 0x04, 0x00, 0x04, 0x01), "body_length"},
		{"RunUpdates run of two without data", "", bld{20}.u32(6).raw(1, 0x80, 0x04, 0x02, 0x00, 0x01), "body_length"},
		{"RunUpdates ids past 2⁶⁴", "", bld{20}.u32(16).raw(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x04, 0x01, 0x07, 0x08), "body_length"},
		{"RunUpdates count not in its shortest form", "", bld{20}.u32(8).raw(1, 0x80, 0x04, 0x81, 0x00, 0x04, 0x01, 0x07), "body_length"},
		{"RunUpdates width code 3", "", bld{20}.u32(5).raw(1, 0x80, 0x04, 0x01, 0x07), "invalid_mask_width"},
		{"RunUpdates run's data past the body", "", bld{20}.u32(7).raw(1, 0x80, 0x04, 0x02, 0x04, 0x01, 0x07), "short_buffer"},
		{"DeltaUpdates without a time", "", bld{18}.u32(1).raw(1), "body_length"},
		{"DeltaUpdates time past the body", "", bld{18}.u32(2).raw(1, 0x80), "short_buffer"},
		{"DeltaUpdates seq not in its shortest form", "", bld{18}.u32(3).raw(0x81, 0x00, 0x00), "body_length"},
		{"DeltaUpdates width code 3", "", bld{18}.u32(5).raw(1, 1, 0x80, 0x04, 0x03), "invalid_mask_width"},
		{"Ack without its bitmap", "", bld{19}.u32(1).raw(1), "body_length"},
		{"Ack with a byte more", "", bld{19}.u32(10).raw(1, 0, 0, 0, 0, 0, 0, 0, 0, 0), "body_length"},
		{"Ack highest overflows", "", bld{19}.u32(19).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0, 0), "body_length"},
		{"Actions bytes after the last action", "", bld{15}.u32(13).u32(1).u32(1).u32(0).raw(9), "body_length"},
		{"PeerExited truncated index", "", bld{2}.raw(1, 2, 3), "short_buffer"},
		{"HostSnapshot truncated host time", "", bld{0}.raw(1, 0, 0, 0), "short_buffer"},
		{"HostSnapshot missing peer count", "", snapHead, "short_buffer"},
		{"HostSnapshot peer count 1, no peer", "", snapHead.u32(1), "short_buffer"},
		{"HostSnapshot huge peer count", "", snapHead.u32(math.MaxUint32).u32(0).u32(0), "short_buffer"},
		{"HostSnapshot peer id truncated", "", snapHead.u32(1).u64(1).u32(5).str("@ab"), "short_buffer"},
		{"HostSnapshot peer id bad UTF-8", "", snapHead.u32(1).u64(1).u32(2).raw(0xc3, 0x28).u32(0).u32(0), "invalid_peer_id"},
		{"HostSnapshot huge entity count", "", snapHead.u32(0).u32(math.MaxUint32).u32(0), "short_buffer"},
		{"HostSnapshot entity count 2, one spawn", "", snapHead.u32(0).u32(2).u64(1).u32(1).u32(0).u32(0).u32(0), "short_buffer"},
		{"HostSnapshot huge creation data length", "", snapHead.u32(0).u32(1).u64(1).u32(1).u32(math.MaxUint32).u32(0).u32(0), "short_buffer"},
		{"HostSnapshot update data past end", "", snapHead.u32(0).u32(1).u64(1).u32(1).u32(0).u32(9).raw(1, 2, 3, 4).u32(0), "short_buffer"},
		{"HostSnapshot missing host state length", "", snapHead.u32(0).u32(0), "short_buffer"},
		{"HostSnapshot host state past end", "", snapHead.u32(0).u32(0).u32(3).raw(1, 2), "short_buffer"},
		{"PeerEntered peer id 257 bytes", "", peerEntered(257, strings.Repeat("a", 257)), "invalid_peer_id"},
		{"PeerEntered peer id length u32 max", "", peerEntered(math.MaxUint32, "a"), "invalid_peer_id"},
		{"PeerEntered peer id truncated", "", peerEntered(5, "abc"), "short_buffer"},
		{"PeerEntered peer id invalid byte", "", peerEntered(1, "\xff"), "invalid_peer_id"},
		{"PeerEntered peer id overlong encoding", "", peerEntered(2, "\xc0\xaf"), "invalid_peer_id"},
		{"PeerEntered peer id surrogate", "", peerEntered(3, "\xed\xa0\x80"), "invalid_peer_id"},
		{"PeerEntered peer id cut multi-byte", "", peerEntered(2, "\xe4\xbe"), "invalid_peer_id"},
		{"HostCommands huge spawn count", "", bld{3}.u32(math.MaxUint32).u32(0).u32(0).u32(0).u32(0), "short_buffer"},
		{"HostCommands despawn count 2, one despawn", "", bld{3}.u32(0).u32(2).u64(1), "short_buffer"},
		{"HostCommands huge authority transfer count", "", bld{3}.u32(0).u32(0).u32(0x10000000).u32(0).u32(0), "short_buffer"},
		{"HostCommands rpc data past end", "", bld{3}.u32(0).u32(0).u32(0).u32(1).u32(1).u32(100).raw(1).u32(0), "short_buffer"},
		{"HostCommands missing action count", "", bld{3}.u32(0).u32(0).u32(0).u32(0), "short_buffer"},
		{"HostCommands huge action count", "", bld{3}.u32(0).u32(0).u32(0).u32(0).u32(math.MaxUint32), "short_buffer"},
		{"PeerCommands huge rpc count", "", bld{4}.u32(math.MaxUint32), "short_buffer"},
		{"PeerCommands rpc data length u32 max", "", bld{4}.u32(1).u32(1).u32(math.MaxUint32).raw(1, 2, 3, 4), "short_buffer"},
		{"EntityUpdates mask width code 3", "", upd.u16(3<<14|1).raw(0, 0, 0, 0, 7), "invalid_mask_width"},
		{"EntityUpdates update count 2, one update", "", bld{5}.u64(10).u32(2).u64(entity(512, 1)).u16(4).raw(1).raw(1, 2, 3, 4).raw(make([]byte, 10)...), "short_buffer"},
		{"EntityUpdates huge update count", "", bld{5}.u64(1).u32(math.MaxUint32).raw(make([]byte, 22)...), "short_buffer"},
		{"EntityUpdates data past end", "", upd.u16(20).raw(1).raw(1, 2, 3), "short_buffer"},
		{"EntityUpdates u32 mask truncated", "", upd.u16(2<<14 /* u32 mask, length 0 */).raw(1, 2, 3), "short_buffer"},
		{"EntityUpdates u16 mask, data past end", "", upd.u16(1<<14|2).raw(1, 0, 9), "short_buffer"},
		{"extension body length truncated", "", bld{8}.raw(16, 0), "short_buffer"},
		{"extension body past end", "", bld{8}.u32(16).u64(1), "short_buffer"},
		{"application body length u32 max", "", bld{200}.u32(math.MaxUint32).raw(1, 2, 3), "short_buffer"},
		{"unknown extension body past end", "", bld{42}.u32(10).raw(1), "short_buffer"},
		{"Ping body 15 bytes", "", bld{8}.u32(15).raw(make([]byte, 15)...), "body_length"},
		{"Ping body 17 bytes", "", bld{8}.u32(17).raw(make([]byte, 17)...), "body_length"},
		{"Pong body 0 bytes", "", bld{9}.u32(0), "body_length"},
		{"Hello body 23 bytes", "", bld{11}.u32(23).raw(make([]byte, 23)...), "body_length"},
		{"Hello body 25 bytes", "", bld{11}.u32(25).raw(make([]byte, 25)...), "body_length"},
		{"Close body 3 bytes", "", bld{10}.u32(3).raw(1, 0, 0), "body_length"},
		{"Close reason length past body", "", bld{10}.u32(6).u16(1).u16(3).str("ab"), "body_length"},
		{"Close body longer than reason", "", bld{10}.u32(7).u16(1).u16(2).str("abc"), "body_length"},
		{"Close reason 257 bytes", "", bld{10}.u32(4 + 257).u16(1).u16(257).str(strings.Repeat("r", 257)), "invalid_reason"},
		{"Close reason bad UTF-8", "", bld{10}.u32(6).u16(1).u16(2).raw(0xe2, 0x82), "invalid_reason"},
		{"Fragment body 11 bytes", "", bld{6}.u32(11).u32(1).u32(1).raw(0, 0, 0), "body_length"},
		{"Fragment chunk past total", "", bld{6}.u32(15).u32(1).u32(2).u32(0).raw(1, 2, 3), "fragment"},
		{"Fragment offset past total", "", bld{6}.u32(13).u32(1).u32(8).u32(9).raw(1), "fragment"},
		{"Fragment offset plus chunk overflows u32", "", bld{6}.u32(13).u32(1).u32(math.MaxUint32).u32(math.MaxUint32).raw(1), "fragment"},
		{"CrdtBatch body 7 bytes", "", bld{7}.u32(7).raw(make([]byte, 7)...), "body_length"},
		{"Ping then truncated Hello", "", bld(ping).raw(11).u32(24).u64(1), "short_buffer"},
		{"EntityUpdates then lone type byte", "", bld(AppendEntityUpdates(nil, &EntityUpdates{Time: 1})).raw(5), "short_buffer"},
		{"unknown extension then bad Ping", "", bld{42}.u32(1).raw(0).raw(8).u32(1).raw(0), "body_length"},
		{"datagram of MaxDatagram+1 (1157) bytes", "datagram", big(MaxDatagram + 1), "too_large"},
		{"reliable message of 16385 bytes", "reliable", big(MaxReliableMessage + 1), "too_large"},
	}
}

type fragmentationDef struct {
	name    string
	id      uint32
	max     int
	payload []byte
}

func fragmentationVectors() []fragmentationDef {
	snap := AppendHostSnapshot(nil, &HostSnapshot{HostTime: 5, LocalPeerIndex: 2, HostPeerIndex: 1, Peers: []PeerInfo{{1, idHost}}})
	return []fragmentationDef{
		{"snapshot in 8-byte chunks", 1, FragmentOverhead + 8, snap},
		{"exact multiple of the chunk size", 2, FragmentOverhead + 4, pattern(12, 1)},
		{"payload fits one fragment", 3, MaxReliableMessage, pattern(5, 2)},
		{"empty payload", 4, MaxReliableMessage, []byte{}},
		{"one-byte chunks", math.MaxUint32, FragmentOverhead + 1, []byte{8, 16, 0}},
	}
}
