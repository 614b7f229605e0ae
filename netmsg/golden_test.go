package netmsg

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../testdata/netmsg from golden_vectors_test.go")

const goldenDir = "../testdata/netmsg"

// u64 is a uint64 written as a JSON decimal string, so that JavaScript
// reads it exactly.
type u64 uint64

func (v u64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(v), 10) + `"`), nil
}

func (v *u64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("u64 %s must be a decimal string: %w", b, err)
	}
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return fmt.Errorf("u64 %q is not a canonical decimal string", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("u64 %q: %w", s, err)
	}
	*v = u64(n)
	return nil
}

// hexBytes is a byte string written as lowercase hex.
type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bytes must be a hex string: %w", err)
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("hex %q is not lowercase", s)
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// JSON mirrors of the wire structs, in wire field order.

type jPeerInfo struct {
	PeerIndex u64    `json:"peerIndex"`
	PeerID    string `json:"peerId"`
}

type jSpawn struct {
	NetworkID    u64      `json:"networkId"`
	SchemaID     uint32   `json:"schemaId"`
	CreationData hexBytes `json:"creationData"`
	UpdateData   hexBytes `json:"updateData"`
}

type jDespawn struct {
	NetworkID u64 `json:"networkId"`
}

type jAuthorityTransfer struct {
	NetworkID      u64 `json:"networkId"`
	NewAuthorIndex u64 `json:"newAuthorIndex"`
}

type jCall struct {
	Type uint32   `json:"type"`
	Data hexBytes `json:"data"`
}

type jUpdate struct {
	NetworkID u64      `json:"networkId"`
	MaskBits  int      `json:"maskBits"`
	Mask      uint32   `json:"mask"`
	Data      hexBytes `json:"data"`
}

type jHostSnapshot struct {
	HostTime       u64         `json:"hostTime"`
	LocalPeerIndex u64         `json:"localPeerIndex"`
	HostPeerIndex  u64         `json:"hostPeerIndex"`
	Peers          []jPeerInfo `json:"peers"`
	Spawns         []jSpawn    `json:"spawns"`
	HostState      hexBytes    `json:"hostState"`
}

type jPeerEntered struct {
	Peer jPeerInfo `json:"peer"`
}

type jPeerExited struct {
	PeerIndex u64 `json:"peerIndex"`
}

type jHostCommands struct {
	Spawns             []jSpawn             `json:"spawns"`
	Despawns           []jDespawn           `json:"despawns"`
	AuthorityTransfers []jAuthorityTransfer `json:"authorityTransfers"`
	RPCs               []jCall              `json:"rpcs"`
	Actions            []jCall              `json:"actions"`
}

type jPeerCommands struct {
	RPCs []jCall `json:"rpcs"`
}

type jEntityUpdates struct {
	Time    u64       `json:"time"`
	Updates []jUpdate `json:"updates"`
}

type jFragment struct {
	MessageID   uint32   `json:"messageId"`
	TotalLength uint32   `json:"totalLength"`
	Offset      uint32   `json:"offset"`
	Chunk       hexBytes `json:"chunk"`
}

type jCrdtBatch struct {
	Term     u64      `json:"term"`
	Messages hexBytes `json:"messages"`
}

type jPing struct {
	Nonce    u64 `json:"nonce"`
	SendTime u64 `json:"sendTime"`
}

type jPong struct {
	Nonce    u64 `json:"nonce"`
	EchoTime u64 `json:"echoTime"`
}

type jClose struct {
	Code   uint16 `json:"code"`
	Reason string `json:"reason"`
}

type jHello struct {
	Term              u64 `json:"term"`
	PeerIndex         u64 `json:"peerIndex"`
	SchemaFingerprint u64 `json:"schemaFingerprint"`
}

// extMsg is any message of type 6–255 seen through its frame only: the
// types netmsg has no body decoder for (12 and up).
type jRelay struct {
	Peer    u64      `json:"peer"`
	AppType uint8    `json:"appType"`
	Data    hexBytes `json:"data"`
}

type jActions struct {
	Actions []jCall `json:"actions"`
}

type jForget struct {
	NetworkIDs []u64 `json:"networkIds"`
}

type jDeltaUpdates struct {
	Seq     u64       `json:"seq"`
	Time    u64       `json:"time"`
	Updates []jUpdate `json:"updates"`
}

type jAck struct {
	Highest  u64 `json:"highest"`
	Received u64 `json:"received"`
}

// packedUpdates is an EntityUpdates that the vectors encode as PackedUpdates.
type packedUpdates EntityUpdates

// runUpdates is an EntityUpdates that the vectors encode as RunUpdates.
type runUpdates EntityUpdates

type extMsg struct {
	Type Type
	Body []byte
}

type jExt struct {
	Type uint8    `json:"type"`
	Body hexBytes `json:"body"`
}

func mapSlice[A, B any](s []A, f func(*A) B) []B {
	out := make([]B, len(s))
	for i := range s {
		out[i] = f(&s[i])
	}
	return out
}

func toJPeer(p *PeerInfo) jPeerInfo   { return jPeerInfo{u64(p.PeerIndex), p.PeerID} }
func fromJPeer(p *jPeerInfo) PeerInfo { return PeerInfo{uint64(p.PeerIndex), p.PeerID} }
func toJSpawn(s *Spawn) jSpawn {
	return jSpawn{u64(s.NetworkID), s.SchemaID, s.CreationData, s.UpdateData}
}
func fromJSpawn(s *jSpawn) Spawn {
	return Spawn{uint64(s.NetworkID), s.SchemaID, s.CreationData, s.UpdateData}
}
func toJRPC(c *RPC) jCall       { return jCall{c.Type, c.Data} }
func fromJRPC(c *jCall) RPC     { return RPC{c.Type, c.Data} }
func toJAction(c *Action) jCall { return jCall{c.Type, c.Data} }
func fromJAction(c *jCall) Action {
	return Action{c.Type, c.Data}
}
func toJUpdate(u *Update) jUpdate {
	return jUpdate{u64(u.NetworkID), u.Width.Bits(), u.Mask, u.Data}
}
func fromJUpdate(u *jUpdate) Update {
	w := Width(3) // an invalid width the encoder rejects
	switch u.MaskBits {
	case 8:
		w = Width8
	case 16:
		w = Width16
	case 32:
		w = Width32
	}
	return Update{uint64(u.NetworkID), w, u.Mask, u.Data}
}

// goldenCodec converts one message type between its JSON fields and its
// bytes, through the package's encoder and decoder.
type goldenCodec interface {
	fileName() string
	// owns reports whether the codec handles messages of type t.
	owns(t Type) bool
	// accepts reports whether v is a value of the codec's Go type.
	accepts(v any) bool
	// fields returns the canonical JSON fields and the encoding of v.
	fields(v any) (json.RawMessage, []byte, error)
	// encode parses JSON fields strictly and encodes them.
	encode(raw json.RawMessage) ([]byte, error)
	// decode decodes the message at the start of b into canonical JSON.
	decode(b []byte) (json.RawMessage, int, error)
	// consume decodes the message at the start of b into a fresh value.
	consume(b []byte) (int, error)
}

type codec[T, J any] struct {
	file      string
	own       func(Type) bool
	toJ       func(*T) J
	fromJ     func(*J) T
	append    func([]byte, *T) []byte
	consumeFn func([]byte, *T) (int, error)
}

func (c codec[T, J]) fileName() string { return c.file }
func (c codec[T, J]) owns(t Type) bool { return c.own(t) }
func (c codec[T, J]) accepts(v any) bool {
	_, ok := v.(T)
	return ok
}

func (c codec[T, J]) fields(v any) (json.RawMessage, []byte, error) {
	t := v.(T)
	raw, err := json.Marshal(c.toJ(&t))
	return raw, c.append(nil, &t), err
}

func (c codec[T, J]) encode(raw json.RawMessage) (b []byte, err error) {
	var j J
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, err
	}
	v := c.fromJ(&j)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("encoder panicked: %v", r)
		}
	}()
	return c.append(nil, &v), nil
}

func (c codec[T, J]) consume(b []byte) (int, error) {
	var v T
	return c.consumeFn(b, &v)
}

func (c codec[T, J]) decode(b []byte) (json.RawMessage, int, error) {
	var v T
	n, err := c.consumeFn(b, &v)
	if err != nil {
		return nil, 0, err
	}
	raw, err := json.Marshal(c.toJ(&v))
	return raw, n, err
}

func is(want Type) func(Type) bool { return func(t Type) bool { return t == want } }

var codecs = []goldenCodec{
	codec[HostSnapshot, jHostSnapshot]{
		file: "host_snapshot.json", own: is(TypeHostSnapshot),
		toJ: func(m *HostSnapshot) jHostSnapshot {
			return jHostSnapshot{u64(m.HostTime), u64(m.LocalPeerIndex), u64(m.HostPeerIndex),
				mapSlice(m.Peers, toJPeer), mapSlice(m.Spawns, toJSpawn), m.HostState}
		},
		fromJ: func(j *jHostSnapshot) HostSnapshot {
			return HostSnapshot{uint64(j.HostTime), uint64(j.LocalPeerIndex), uint64(j.HostPeerIndex),
				mapSlice(j.Peers, fromJPeer), mapSlice(j.Spawns, fromJSpawn), j.HostState}
		},
		append: AppendHostSnapshot, consumeFn: ConsumeHostSnapshot,
	},
	codec[PeerEntered, jPeerEntered]{
		file: "peer_entered.json", own: is(TypePeerEntered),
		toJ:    func(m *PeerEntered) jPeerEntered { return jPeerEntered{toJPeer(&m.Peer)} },
		fromJ:  func(j *jPeerEntered) PeerEntered { return PeerEntered{fromJPeer(&j.Peer)} },
		append: AppendPeerEntered, consumeFn: ConsumePeerEntered,
	},
	codec[PeerExited, jPeerExited]{
		file: "peer_exited.json", own: is(TypePeerExited),
		toJ:    func(m *PeerExited) jPeerExited { return jPeerExited{u64(m.PeerIndex)} },
		fromJ:  func(j *jPeerExited) PeerExited { return PeerExited{uint64(j.PeerIndex)} },
		append: AppendPeerExited, consumeFn: ConsumePeerExited,
	},
	codec[HostCommands, jHostCommands]{
		file: "host_commands.json", own: is(TypeHostCommands),
		toJ: func(m *HostCommands) jHostCommands {
			return jHostCommands{
				mapSlice(m.Spawns, toJSpawn),
				mapSlice(m.Despawns, func(d *Despawn) jDespawn { return jDespawn{u64(d.NetworkID)} }),
				mapSlice(m.AuthorityTransfers, func(a *AuthorityTransfer) jAuthorityTransfer {
					return jAuthorityTransfer{u64(a.NetworkID), u64(a.NewAuthorIndex)}
				}),
				mapSlice(m.RPCs, toJRPC), mapSlice(m.Actions, toJAction)}
		},
		fromJ: func(j *jHostCommands) HostCommands {
			return HostCommands{
				mapSlice(j.Spawns, fromJSpawn),
				mapSlice(j.Despawns, func(d *jDespawn) Despawn { return Despawn{uint64(d.NetworkID)} }),
				mapSlice(j.AuthorityTransfers, func(a *jAuthorityTransfer) AuthorityTransfer {
					return AuthorityTransfer{uint64(a.NetworkID), uint64(a.NewAuthorIndex)}
				}),
				mapSlice(j.RPCs, fromJRPC), mapSlice(j.Actions, fromJAction)}
		},
		append: AppendHostCommands, consumeFn: ConsumeHostCommands,
	},
	codec[PeerCommands, jPeerCommands]{
		file: "peer_commands.json", own: is(TypePeerCommands),
		toJ:    func(m *PeerCommands) jPeerCommands { return jPeerCommands{mapSlice(m.RPCs, toJRPC)} },
		fromJ:  func(j *jPeerCommands) PeerCommands { return PeerCommands{mapSlice(j.RPCs, fromJRPC)} },
		append: AppendPeerCommands, consumeFn: ConsumePeerCommands,
	},
	codec[EntityUpdates, jEntityUpdates]{
		file: "entity_updates.json", own: is(TypeEntityUpdates),
		toJ: func(m *EntityUpdates) jEntityUpdates {
			return jEntityUpdates{u64(m.Time), mapSlice(m.Updates, toJUpdate)}
		},
		fromJ: func(j *jEntityUpdates) EntityUpdates {
			return EntityUpdates{uint64(j.Time), mapSlice(j.Updates, fromJUpdate)}
		},
		append: AppendEntityUpdates, consumeFn: ConsumeEntityUpdates,
	},
	codec[Fragment, jFragment]{
		file: "fragment.json", own: is(TypeFragment),
		toJ: func(m *Fragment) jFragment {
			return jFragment{m.MessageID, m.TotalLength, m.Offset, m.Chunk}
		},
		fromJ: func(j *jFragment) Fragment {
			return Fragment{j.MessageID, j.TotalLength, j.Offset, j.Chunk}
		},
		append: AppendFragment, consumeFn: ConsumeFragment,
	},
	codec[CrdtBatch, jCrdtBatch]{
		file: "crdt_batch.json", own: is(TypeCrdtBatch),
		toJ:    func(m *CrdtBatch) jCrdtBatch { return jCrdtBatch{u64(m.Term), m.Messages} },
		fromJ:  func(j *jCrdtBatch) CrdtBatch { return CrdtBatch{uint64(j.Term), j.Messages} },
		append: AppendCrdtBatch, consumeFn: ConsumeCrdtBatch,
	},
	codec[Ping, jPing]{
		file: "ping.json", own: is(TypePing),
		toJ:    func(m *Ping) jPing { return jPing{u64(m.Nonce), u64(m.SendTime)} },
		fromJ:  func(j *jPing) Ping { return Ping{uint64(j.Nonce), uint64(j.SendTime)} },
		append: AppendPing, consumeFn: ConsumePing,
	},
	codec[Pong, jPong]{
		file: "pong.json", own: is(TypePong),
		toJ:    func(m *Pong) jPong { return jPong{u64(m.Nonce), u64(m.EchoTime)} },
		fromJ:  func(j *jPong) Pong { return Pong{uint64(j.Nonce), uint64(j.EchoTime)} },
		append: AppendPong, consumeFn: ConsumePong,
	},
	codec[Close, jClose]{
		file: "close.json", own: is(TypeClose),
		toJ:    func(m *Close) jClose { return jClose{m.Code, m.Reason} },
		fromJ:  func(j *jClose) Close { return Close{j.Code, j.Reason} },
		append: AppendClose, consumeFn: ConsumeClose,
	},
	codec[Hello, jHello]{
		file: "hello.json", own: is(TypeHello),
		toJ: func(m *Hello) jHello {
			return jHello{u64(m.Term), u64(m.PeerIndex), u64(m.SchemaFingerprint)}
		},
		fromJ: func(j *jHello) Hello {
			return Hello{uint64(j.Term), uint64(j.PeerIndex), uint64(j.SchemaFingerprint)}
		},
		append: AppendHello, consumeFn: ConsumeHello,
	},
	codec[Relay, jRelay]{
		file: "relay.json", own: is(TypeRelay),
		toJ:    func(m *Relay) jRelay { return jRelay{u64(m.Peer), uint8(m.AppType), m.Data} },
		fromJ:  func(j *jRelay) Relay { return Relay{uint64(j.Peer), Type(j.AppType), j.Data} },
		append: AppendRelay, consumeFn: ConsumeRelay,
	},
	codec[Actions, jActions]{
		file: "actions.json", own: is(TypeActions),
		toJ:    func(m *Actions) jActions { return jActions{mapSlice(m.Actions, toJAction)} },
		fromJ:  func(j *jActions) Actions { return Actions{mapSlice(j.Actions, fromJAction)} },
		append: AppendActions, consumeFn: ConsumeActions,
	},
	codec[Forget, jForget]{
		file: "forget.json", own: is(TypeForget),
		toJ: func(m *Forget) jForget {
			return jForget{mapSlice(m.NetworkIDs, func(id *uint64) u64 { return u64(*id) })}
		},
		fromJ: func(j *jForget) Forget {
			return Forget{mapSlice(j.NetworkIDs, func(id *u64) uint64 { return uint64(*id) })}
		},
		append: AppendForget, consumeFn: ConsumeForget,
	},
	codec[packedUpdates, jEntityUpdates]{
		file: "packed_updates.json", own: is(TypePackedUpdates),
		toJ: func(m *packedUpdates) jEntityUpdates {
			return jEntityUpdates{u64(m.Time), mapSlice(m.Updates, toJUpdate)}
		},
		fromJ: func(j *jEntityUpdates) packedUpdates {
			return packedUpdates{uint64(j.Time), mapSlice(j.Updates, fromJUpdate)}
		},
		append: func(dst []byte, m *packedUpdates) []byte { return AppendPackedUpdates(dst, (*EntityUpdates)(m)) },
		consumeFn: func(b []byte, m *packedUpdates) (int, error) {
			return ConsumePackedUpdates(b, (*EntityUpdates)(m))
		},
	},
	codec[runUpdates, jEntityUpdates]{
		file: "run_updates.json", own: is(TypeRunUpdates),
		toJ: func(m *runUpdates) jEntityUpdates {
			return jEntityUpdates{u64(m.Time), mapSlice(m.Updates, toJUpdate)}
		},
		fromJ: func(j *jEntityUpdates) runUpdates {
			return runUpdates{uint64(j.Time), mapSlice(j.Updates, fromJUpdate)}
		},
		append: func(dst []byte, m *runUpdates) []byte { return AppendRunUpdates(dst, (*EntityUpdates)(m)) },
		consumeFn: func(b []byte, m *runUpdates) (int, error) {
			return ConsumeRunUpdates(b, (*EntityUpdates)(m))
		},
	},
	codec[DeltaUpdates, jDeltaUpdates]{
		file: "delta_updates.json", own: is(TypeDeltaUpdates),
		toJ: func(m *DeltaUpdates) jDeltaUpdates {
			return jDeltaUpdates{u64(m.Seq), u64(m.Time), mapSlice(m.Updates, toJUpdate)}
		},
		fromJ: func(j *jDeltaUpdates) DeltaUpdates {
			return DeltaUpdates{uint64(j.Seq), EntityUpdates{uint64(j.Time), mapSlice(j.Updates, fromJUpdate)}}
		},
		append: AppendDeltaUpdates, consumeFn: ConsumeDeltaUpdates,
	},
	codec[Ack, jAck]{
		file: "ack.json", own: is(TypeAck),
		toJ:    func(m *Ack) jAck { return jAck{u64(m.Highest), u64(m.Received)} },
		fromJ:  func(j *jAck) Ack { return Ack{uint64(j.Highest), uint64(j.Received)} },
		append: AppendAck, consumeFn: ConsumeAck,
	},
	codec[extMsg, jExt]{
		file: "ext.json", own: func(t Type) bool {
			return t.IsFramed() && t > TypeHello && t != TypeRelay && t != TypeActions && t != TypeForget && t != TypePackedUpdates &&
				t != TypeDeltaUpdates && t != TypeAck && t != TypeRunUpdates
		},
		toJ:   func(m *extMsg) jExt { return jExt{uint8(m.Type), m.Body} },
		fromJ: func(j *jExt) extMsg { return extMsg{Type(j.Type), j.Body} },
		append: func(dst []byte, m *extMsg) []byte {
			return AppendExt(dst, m.Type, m.Body)
		},
		consumeFn: func(b []byte, m *extMsg) (int, error) {
			t, body, n, err := ConsumeExt(b)
			*m = extMsg{t, body}
			return n, err
		},
	},
}

func codecFor(t Type) goldenCodec {
	for _, c := range codecs {
		if c.owns(t) {
			return c
		}
	}
	panic(fmt.Sprintf("no codec for %v", t))
}

func codecOf(v any) goldenCodec {
	for _, c := range codecs {
		if c.accepts(v) {
			return c
		}
	}
	panic(fmt.Sprintf("no codec for %T", v))
}

// Files written as arrays of vectors.

type goldenVector struct {
	Name   string          `json:"name"`
	Fields json.RawMessage `json:"fields"`
	Hex    string          `json:"hex"`
}

type jPayloadMessage struct {
	Type   uint8           `json:"type"`
	Fields json.RawMessage `json:"fields"`
}

type jPayload struct {
	Messages []jPayloadMessage `json:"messages"`
}

type invalidVector struct {
	Name   string `json:"name"`
	Check  string `json:"check,omitempty"`
	Hex    string `json:"hex"`
	Error  string `json:"error"`
	Offset int    `json:"offset"`
}

type fragmentationVector struct {
	Name        string     `json:"name"`
	MessageID   uint32     `json:"messageId"`
	MaxFragment int        `json:"maxFragment"`
	Payload     hexBytes   `json:"payload"`
	Fragments   []hexBytes `json:"fragments"`
}

type maskWidthVector struct {
	Properties int `json:"properties"`
	MaskBits   int `json:"maskBits"`
}

// errorNames maps invalid.json error names to sentinels.
var errorNames = map[string]error{
	"short_buffer":       ErrShortBuffer,
	"wrong_type":         ErrWrongType,
	"too_large":          ErrTooLarge,
	"invalid_mask_width": ErrInvalidMaskWidth,
	"invalid_peer_id":    ErrInvalidPeerID,
	"invalid_reason":     ErrInvalidReason,
	"body_length":        ErrBodyLength,
	"fragment":           ErrFragment,
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func writeJSON(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(goldenDir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	if s != strings.ToLower(s) {
		t.Fatalf("hex %.40q… is not lowercase", s)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden checks every committed vector both ways: fields → exact bytes
// and bytes → exact fields. With -update it first rewrites the files from
// golden_vectors_test.go.
func TestGolden(t *testing.T) {
	if *update {
		writeGolden(t)
	}
	for _, c := range codecs {
		t.Run(c.fileName(), func(t *testing.T) {
			var vecs []goldenVector
			readJSON(t, c.fileName(), &vecs)
			if len(vecs) == 0 {
				t.Fatal("no vectors")
			}
			seen := map[string]bool{}
			for _, v := range vecs {
				if seen[v.Name] {
					t.Errorf("duplicate vector name %q", v.Name)
				}
				seen[v.Name] = true
				t.Run(v.Name, func(t *testing.T) { checkVector(t, c, v.Fields, mustHex(t, v.Hex)) })
			}
		})
	}
	t.Run("payload.json", testGoldenPayloads)
	t.Run("invalid.json", testGoldenInvalid)
	t.Run("fragmentation.json", testGoldenFragmentation)
	t.Run("mask_width.json", testGoldenMaskWidth)
}

func checkVector(t *testing.T, c goldenCodec, fields json.RawMessage, want []byte) {
	t.Helper()
	got, err := c.encode(fields)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encode:\n got %x\nwant %x", got, want)
	}
	raw, n, err := c.decode(want)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if n != len(want) {
		t.Errorf("decode consumed %d of %d bytes", n, len(want))
	}
	if g, w := string(raw), compact(t, fields); g != w {
		t.Errorf("decode:\n got %s\nwant %s", g, w)
	}
	// The Reader sees exactly one valid message.
	r := NewReader(want)
	m, err := r.Next()
	if err != nil && !(errors.Is(err, ErrUnknownType) && m.Type.IsExtension() && !m.Type.Known()) {
		t.Fatalf("Reader.Next: %v", err)
	}
	if !bytes.Equal(m.Raw, want) || r.More() {
		t.Errorf("Reader.Next returned %d bytes of %d, More=%v", len(m.Raw), len(want), r.More())
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Reader.Next at end = %v, want io.EOF", err)
	}
}

func testGoldenPayloads(t *testing.T) {
	var vecs []goldenVector
	readJSON(t, "payload.json", &vecs)
	for _, v := range vecs {
		t.Run(v.Name, func(t *testing.T) {
			var p jPayload
			dec := json.NewDecoder(bytes.NewReader(v.Fields))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			want := mustHex(t, v.Hex)
			var enc []byte
			for _, m := range p.Messages {
				b, err := codecFor(Type(m.Type)).encode(m.Fields)
				if err != nil {
					t.Fatalf("encode %v: %v", Type(m.Type), err)
				}
				enc = append(enc, b...)
			}
			if !bytes.Equal(enc, want) {
				t.Errorf("encode:\n got %x\nwant %x", enc, want)
			}
			r := NewReader(want)
			i := 0
			for r.More() {
				m, err := r.Next()
				if err != nil && !errors.Is(err, ErrUnknownType) {
					t.Fatalf("message %d: %v", i, err)
				}
				if i >= len(p.Messages) {
					t.Fatalf("more than %d messages", len(p.Messages))
				}
				if uint8(m.Type) != p.Messages[i].Type {
					t.Errorf("message %d type %v, want %v", i, m.Type, Type(p.Messages[i].Type))
				}
				raw, n, err := codecFor(m.Type).decode(m.Raw)
				if err != nil || n != len(m.Raw) {
					t.Fatalf("message %d: n=%d of %d, %v", i, n, len(m.Raw), err)
				}
				if g, w := string(raw), compact(t, p.Messages[i].Fields); g != w {
					t.Errorf("message %d:\n got %s\nwant %s", i, g, w)
				}
				i++
			}
			if i != len(p.Messages) {
				t.Errorf("read %d messages, want %d", i, len(p.Messages))
			}
		})
	}
}

func testGoldenInvalid(t *testing.T) {
	var vecs []invalidVector
	readJSON(t, "invalid.json", &vecs)
	for _, v := range vecs {
		t.Run(v.Name, func(t *testing.T) {
			b := mustHex(t, v.Hex)
			want, ok := errorNames[v.Error]
			if !ok {
				t.Fatalf("unknown error name %q", v.Error)
			}
			var err error
			switch v.Check {
			case "datagram":
				err = CheckDatagram(b)
			case "reliable":
				err = CheckReliable(b)
			case "":
				err = readAll(b)
			default:
				t.Fatalf("unknown check %q", v.Check)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ProtocolError", err)
			}
			if !errors.Is(err, want) {
				t.Errorf("err = %v, want %v", err, want)
			}
			if pe.Offset != v.Offset {
				t.Errorf("offset = %d, want %d (%v)", pe.Offset, v.Offset, err)
			}
			if v.Check != "" {
				return
			}
			// The typed decoder of the failing message, given a value to
			// fill, fails in the same way.
			r := NewReader(b)
			for r.More() {
				if _, err := r.Next(); err != nil && !errors.Is(err, ErrUnknownType) {
					break
				}
			}
			start := r.Offset()
			_, _, derr := codecFor(Type(b[start])).decode(b[start:])
			var dpe *ProtocolError
			if !errors.As(derr, &dpe) || !errors.Is(derr, want) || dpe.Offset+start != v.Offset {
				t.Errorf("typed decoder: %v, want %v at %d", derr, want, v.Offset-start)
			}
		})
	}
}

// readAll walks a payload and returns its first protocol error.
func readAll(b []byte) error {
	r := NewReader(b)
	for r.More() {
		if _, err := r.Next(); err != nil && !errors.Is(err, ErrUnknownType) {
			return err
		}
	}
	return nil
}

func testGoldenFragmentation(t *testing.T) {
	var vecs []fragmentationVector
	readJSON(t, "fragmentation.json", &vecs)
	for _, v := range vecs {
		t.Run(v.Name, func(t *testing.T) {
			f := NewFragmenter(v.Payload, v.MessageID, v.MaxFragment)
			var got []hexBytes
			for {
				b, ok := f.Next(nil)
				if !ok {
					break
				}
				got = append(got, b)
			}
			if len(got) != len(v.Fragments) || len(got) != FragmentCount(len(v.Payload), v.MaxFragment) {
				t.Fatalf("%d fragments, want %d (FragmentCount %d)", len(got), len(v.Fragments), FragmentCount(len(v.Payload), v.MaxFragment))
			}
			var r Reassembler
			for i := range got {
				if !bytes.Equal(got[i], v.Fragments[i]) {
					t.Errorf("fragment %d:\n got %x\nwant %x", i, got[i], v.Fragments[i])
				}
				var fr Fragment
				if _, err := ConsumeFragment(v.Fragments[i], &fr); err != nil {
					t.Fatal(err)
				}
				payload, done, err := r.Push(&fr)
				if err != nil || done != (i == len(got)-1) {
					t.Fatalf("Push %d: done=%v err=%v", i, done, err)
				}
				if done && !bytes.Equal(payload, v.Payload) {
					t.Errorf("reassembled %x, want %x", payload, v.Payload)
				}
			}
		})
	}
}

func testGoldenMaskWidth(t *testing.T) {
	var vecs []maskWidthVector
	readJSON(t, "mask_width.json", &vecs)
	for _, v := range vecs {
		w, err := MaskWidth(v.Properties)
		if err != nil || w.Bits() != v.MaskBits {
			t.Errorf("MaskWidth(%d) = %v, %v; want %d bits", v.Properties, w, err, v.MaskBits)
		}
	}
}

// writeGolden regenerates every file from golden_vectors_test.go.
func writeGolden(t *testing.T) {
	t.Helper()
	byFile := map[string][]goldenVector{}
	for _, v := range messageVectors() {
		c := codecOf(v.value)
		raw, b, err := c.fields(v.value)
		if err != nil {
			t.Fatal(err)
		}
		byFile[c.fileName()] = append(byFile[c.fileName()], goldenVector{v.name, raw, hex.EncodeToString(b)})
	}
	for _, c := range codecs {
		writeJSON(t, c.fileName(), byFile[c.fileName()])
	}

	var payloads []goldenVector
	for _, p := range payloadVectors() {
		var jp jPayload
		var all []byte
		for _, v := range p.values {
			raw, b, err := codecOf(v).fields(v)
			if err != nil {
				t.Fatal(err)
			}
			jp.Messages = append(jp.Messages, jPayloadMessage{b[0], raw})
			all = append(all, b...)
		}
		raw, err := json.Marshal(jp)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, goldenVector{p.name, raw, hex.EncodeToString(all)})
	}
	writeJSON(t, "payload.json", payloads)

	var invalid []invalidVector
	for _, v := range invalidVectors() {
		var err error
		switch v.check {
		case "datagram":
			err = CheckDatagram(v.b)
		case "reliable":
			err = CheckReliable(v.b)
		default:
			err = readAll(v.b)
		}
		var pe *ProtocolError
		if !errors.As(err, &pe) || !errors.Is(err, errorNames[v.err]) {
			t.Fatalf("invalid vector %q: got %v, want %s", v.name, err, v.err)
		}
		invalid = append(invalid, invalidVector{v.name, v.check, hex.EncodeToString(v.b), v.err, pe.Offset})
	}
	writeJSON(t, "invalid.json", invalid)

	var frags []fragmentationVector
	for _, v := range fragmentationVectors() {
		f := NewFragmenter(v.payload, v.id, v.max)
		fv := fragmentationVector{v.name, v.id, v.max, v.payload, nil}
		for {
			b, ok := f.Next(nil)
			if !ok {
				break
			}
			fv.Fragments = append(fv.Fragments, b)
		}
		frags = append(frags, fv)
	}
	writeJSON(t, "fragmentation.json", frags)

	var widths []maskWidthVector
	for p := 0; p <= MaxProperties; p++ {
		w, err := MaskWidth(p)
		if err != nil {
			t.Fatal(err)
		}
		widths = append(widths, maskWidthVector{p, w.Bits()})
	}
	writeJSON(t, "mask_width.json", widths)
}
