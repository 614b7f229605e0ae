package sigclient

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Golden client messages: the examples of docs/protocol.md §4.
var goldenClientMessages = []string{
	`{"v":1,"type":"join","room":"lobby","user":"alice","device":"tab-1","kind":"browser","token":"eyJhbGciOiJIUzI1NiJ9.e30.x"}`,
	`{"v":1,"type":"join","room":"lobby","user":"bob"}`,
	`{"v":1,"type":"signal","to":2,"payload":{"kind":"offer","sdp":"v=0\r\n","session":1}}`,
	`{"v":1,"type":"signal","to":1,"payload":{"kind":"answer","sdp":"v=0\r\n","session":1}}`,
	`{"v":1,"type":"signal","to":2,"room":"lobby","payload":{"kind":"candidate","candidate":{"candidate":"candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host","sdpMid":"0","sdpMLineIndex":0},"session":1}}`,
	`{"v":1,"type":"synced"}`,
	`{"v":1,"type":"report","replica":{"term":3,"clock":1234,"entities":17,"hash":"00ff00ff00ff00ff"}}`,
}

func TestDecodeClientMessage(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{name: "join full", in: goldenClientMessages[0]},
		{name: "join minimal", in: goldenClientMessages[1]},
		{name: "offer", in: goldenClientMessages[2]},
		{name: "answer", in: goldenClientMessages[3]},
		{name: "candidate", in: goldenClientMessages[4]},
		{name: "synced", in: goldenClientMessages[5]},
		{name: "report", in: goldenClientMessages[6]},
		{name: "unknown fields are ignored", in: `{"v":1,"type":"synced","power":100}`},
		{name: "not json", in: `{"v":1,`, wantErr: ErrBadMessage},
		{name: "empty", in: ``, wantErr: ErrBadMessage},
		{name: "array", in: `[]`, wantErr: ErrBadMessage},
		{name: "no version", in: `{"type":"synced"}`, wantErr: ErrUnsupportedVersion},
		{name: "version 2", in: `{"v":2,"type":"synced"}`, wantErr: ErrUnsupportedVersion},
		{name: "unknown type", in: `{"v":1,"type":"dance"}`, wantErr: ErrBadMessage},
		{name: "join without room", in: `{"v":1,"type":"join","user":"a"}`, wantErr: ErrBadMessage},
		{name: "join with control char in room", in: `{"v":1,"type":"join","room":"a\u0001","user":"a"}`, wantErr: ErrBadMessage},
		{name: "join with slash in user", in: `{"v":1,"type":"join","room":"r","user":"a/b"}`, wantErr: ErrBadMessage},
		{name: "join with slash in device", in: `{"v":1,"type":"join","room":"r","user":"a","device":"x/y"}`, wantErr: ErrBadMessage},
		{name: "join with reserved device", in: `{"v":1,"type":"join","room":"r","user":"a","device":"~1"}`, wantErr: ErrBadMessage},
		{name: "join with long room", in: `{"v":1,"type":"join","user":"a","room":"` + strings.Repeat("r", 129) + `"}`, wantErr: ErrBadMessage},
		{name: "join with unknown kind", in: `{"v":1,"type":"join","room":"r","user":"a","kind":"robot"}`, wantErr: ErrBadMessage},
		{name: "join with huge token", in: `{"v":1,"type":"join","room":"r","user":"a","token":"` + strings.Repeat("t", 4097) + `"}`, wantErr: ErrBadMessage},
		{name: "signal without to", in: `{"v":1,"type":"signal","payload":{"kind":"offer","sdp":"x"}}`, wantErr: ErrBadSignal},
		{name: "signal without payload", in: `{"v":1,"type":"signal","to":2}`, wantErr: ErrBadSignal},
		{name: "offer without sdp", in: `{"v":1,"type":"signal","to":2,"payload":{"kind":"offer"}}`, wantErr: ErrBadSignal},
		{name: "offer with candidate", in: `{"v":1,"type":"signal","to":2,"payload":{"kind":"offer","sdp":"x","candidate":{"candidate":""}}}`, wantErr: ErrBadSignal},
		{name: "candidate without candidate", in: `{"v":1,"type":"signal","to":2,"payload":{"kind":"candidate"}}`, wantErr: ErrBadSignal},
		{name: "candidate with sdp", in: `{"v":1,"type":"signal","to":2,"payload":{"kind":"candidate","sdp":"x","candidate":{"candidate":""}}}`, wantErr: ErrBadSignal},
		{name: "unknown payload kind", in: `{"v":1,"type":"signal","to":2,"payload":{"kind":"pranswer","sdp":"x"}}`, wantErr: ErrBadSignal},
		{name: "negative to", in: `{"v":1,"type":"signal","to":-2,"payload":{"kind":"offer","sdp":"x"}}`, wantErr: ErrBadMessage},
		{name: "report without replica", in: `{"v":1,"type":"report"}`, wantErr: ErrBadMessage},
		{name: "report with short hash", in: `{"v":1,"type":"report","replica":{"term":1,"clock":1,"entities":1,"hash":"ff"}}`, wantErr: ErrBadMessage},
		{name: "report with uppercase hash", in: `{"v":1,"type":"report","replica":{"term":1,"clock":1,"entities":1,"hash":"00FF00FF00FF00FF"}}`, wantErr: ErrBadMessage},
		{name: "report with numeric hash", in: `{"v":1,"type":"report","replica":{"term":1,"clock":1,"entities":1,"hash":255}}`, wantErr: ErrBadMessage},
		{name: "report with float clock", in: `{"v":1,"type":"report","replica":{"term":1,"clock":1.5,"entities":1,"hash":"00ff00ff00ff00ff"}}`, wantErr: ErrBadMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			err := DecodeClientMessage([]byte(tt.in), &m)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("decode error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeClientMessageFields(t *testing.T) {
	var m ClientMessage
	if err := DecodeClientMessage([]byte(goldenClientMessages[6]), &m); err != nil {
		t.Fatal(err)
	}
	want := Report{Term: 3, Clock: 1234, Entities: 17, Hash: 0x00ff00ff00ff00ff}
	if m.Replica == nil || *m.Replica != want {
		t.Fatalf("replica = %+v, want %+v", m.Replica, want)
	}
	// Decoding into a used message must not keep old fields.
	if err := DecodeClientMessage([]byte(goldenClientMessages[5]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Replica != nil || m.Type != TypeSynced {
		t.Fatalf("stale fields after reuse: %+v", m)
	}
	if err := DecodeClientMessage([]byte(goldenClientMessages[4]), &m); err != nil {
		t.Fatal(err)
	}
	c := m.Payload.Candidate
	if m.To != 2 || m.Room != "lobby" || c == nil || c.SDPMid == nil || *c.SDPMid != "0" || c.SDPMLineIndex == nil || *c.SDPMLineIndex != 0 || m.Payload.Session != 1 {
		t.Fatalf("candidate fields: %+v %+v", m, c)
	}
}

// TestServerMessageGolden pins the wire form of every server message; the
// same strings appear in docs/protocol.md §4.
func TestServerMessageGolden(t *testing.T) {
	alice := Member{Index: 1, ID: "alice/tab-1", Kind: KindBrowser, Power: 50, MayHost: true, Synced: true, SyncedTerm: 1}
	bob := Member{Index: 2, ID: "bob/~2", Kind: KindBot, Power: 0, MayHost: true, Synced: false}
	mid := "0"
	var zero uint16
	tests := []struct {
		name string
		msg  any
		want string
	}{
		{"joined", JoinedMsg{V: 1, Type: TypeJoined, Room: "lobby", Self: 2, PeerID: "bob/~2", Term: 1, Host: 1, Members: []Member{alice, bob}, Pinned: []Identity{"alice"}},
			`{"v":1,"type":"joined","room":"lobby","self":2,"peerId":"bob/~2","term":1,"host":1,"members":[{"peerIndex":1,"peerId":"alice/tab-1","kind":"browser","power":50,"mayHost":true,"synced":true,"syncedTerm":1},{"peerIndex":2,"peerId":"bob/~2","kind":"bot","power":0,"mayHost":true,"synced":false}],"pinnedHosts":["alice"]}`},
		{"member-joined", MemberJoinedMsg{V: 1, Type: TypeMemberJoined, Member: bob},
			`{"v":1,"type":"member-joined","member":{"peerIndex":2,"peerId":"bob/~2","kind":"bot","power":0,"mayHost":true,"synced":false}}`},
		{"member-left", MemberLeftMsg{V: 1, Type: TypeMemberLeft, PeerIndex: 1, PeerID: "alice/tab-1", Reason: ReasonTimeout},
			`{"v":1,"type":"member-left","peerIndex":1,"peerId":"alice/tab-1","reason":"timeout"}`},
		{"member-synced", MemberSyncedMsg{V: 1, Type: TypeMemberSynced, PeerIndex: 2, Term: 1},
			`{"v":1,"type":"member-synced","peerIndex":2,"term":1}`},
		{"host", HostMsg{V: 1, Type: TypeHost, Term: 2, Host: 2},
			`{"v":1,"type":"host","term":2,"host":2}`},
		{"signal", SignalMsg{V: 1, Type: TypeSignal, From: 1, To: 2, Payload: SignalPayload{Kind: SignalCandidate, Candidate: &ICECandidate{Candidate: "candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host", SDPMid: &mid, SDPMLineIndex: &zero}, Session: 1}},
			`{"v":1,"type":"signal","from":1,"to":2,"payload":{"kind":"candidate","candidate":{"candidate":"candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host","sdpMid":"0","sdpMLineIndex":0},"session":1}}`},
		{"error", errorMsg{V: 1, Type: typeError, Code: CodeUnknownPeer, Message: `signaling: unknown peer: no member with peer index 7 in room "lobby"`, PeerIndex: 7},
			`{"v":1,"type":"error","code":"unknown_peer","message":"signaling: unknown peer: no member with peer index 7 in room \"lobby\"","peerIndex":7}`},
		{"error-signal", errorMsg{V: 1, Type: typeError, Code: CodeRecipientBusy, Message: "signaling: recipient busy: peer 1's queue is full; signal not relayed", PeerIndex: 1, Signal: SignalOffer, Session: 3},
			`{"v":1,"type":"error","code":"recipient_busy","message":"signaling: recipient busy: peer 1's queue is full; signal not relayed","peerIndex":1,"signal":"offer","session":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(MustMarshal(tt.msg))
			if got != tt.want {
				t.Fatalf("encoded\n got %s\nwant %s", got, tt.want)
			}
			// The client decodes what the server encodes.
			var sm ServerMessage
			ev, err := DecodeServerMessage([]byte(got), &sm)
			if err != nil || ev == nil {
				t.Fatalf("client decode: %v, %v", ev, err)
			}
		})
	}
}

func TestDecodeServerMessageEvents(t *testing.T) {
	var sm ServerMessage
	ev, err := DecodeServerMessage([]byte(`{"v":1,"type":"host","term":5,"host":3}`), &sm)
	if err != nil || ev != (HostChanged{Term: 5, Host: 3}) {
		t.Fatalf("host: %#v, %v", ev, err)
	}
	ev, err = DecodeServerMessage([]byte(`{"v":1,"type":"member-synced","peerIndex":2,"term":4}`), &sm)
	if err != nil || ev != (MemberSynced{Index: 2, Term: 4}) {
		t.Fatalf("member-synced: %#v, %v", ev, err)
	}
	ev, err = DecodeServerMessage([]byte(`{"v":1,"type":"member-joined","member":{"peerIndex":3,"peerId":"c/1","kind":"bot","power":0,"mayHost":true,"synced":true,"syncedTerm":2}}`), &sm)
	if err != nil || ev.(MemberJoined).Member.SyncedTerm != 2 {
		t.Fatalf("member-joined: %#v, %v", ev, err)
	}
	ev, err = DecodeServerMessage([]byte(`{"v":1,"type":"member-left","peerIndex":2,"peerId":"b/1","reason":"dropped"}`), &sm)
	if err != nil || ev != (MemberLeft{Index: 2, PeerID: "b/1", Reason: ReasonDropped}) {
		t.Fatalf("member-left: %#v, %v", ev, err)
	}
	ev, err = DecodeServerMessage([]byte(`{"v":1,"type":"error","code":"room_full","message":"full"}`), &sm)
	if err != nil || !errors.Is(ev.(Error), ErrRoomFull) {
		t.Fatalf("error: %#v, %v", ev, err)
	}
	ev, err = DecodeServerMessage([]byte(`{"v":1,"type":"future-thing"}`), &sm)
	if err != nil || ev != nil {
		t.Fatalf("unknown type: %#v, %v", ev, err)
	}
	if _, err := DecodeServerMessage([]byte(`{"v":1,"type":"signal","from":1,"payload":{"kind":"offer"}}`), &sm); !errors.Is(err, ErrBadSignal) {
		t.Fatalf("bad signal: %v", err)
	}
}

func TestReportJSON(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want string
	}{
		{"zero", Report{}, `{"term":0,"clock":0,"entities":0,"hash":"0000000000000000"}`},
		{"max", Report{Term: 1, Clock: 1 << 53, Entities: 7, Hash: ^uint64(0)}, `{"term":1,"clock":9007199254740992,"entities":7,"hash":"ffffffffffffffff"}`},
		{"mixed", Report{Term: 3, Clock: 1234, Entities: 17, Hash: 0x0123456789abcdef}, `{"term":3,"clock":1234,"entities":17,"hash":"0123456789abcdef"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.r)
			if err != nil || string(b) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tt.want)
			}
			var back Report
			if err := json.Unmarshal(b, &back); err != nil || back != tt.r {
				t.Fatalf("Unmarshal = %+v, %v", back, err)
			}
		})
	}
}

func TestErrorCodesRoundTrip(t *testing.T) {
	for _, e := range CodeTable {
		t.Run(string(e.Code), func(t *testing.T) {
			if got := CodeOf(e.Err); got != e.Code {
				t.Fatalf("codeOf(%v) = %q", e.Err, got)
			}
			if !errors.Is(Error{Code: e.Code}, e.Err) {
				t.Fatalf("Error{%q} does not wrap %v", e.Code, e.Err)
			}
		})
	}
}

func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range goldenClientMessages {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"v":1,"type":"report","replica":{"term":1,"clock":1,"entities":1,"hash":"0123456789abcdef"}}`))
	f.Add([]byte(`{"v":1,"type":"signal","to":18446744073709551615,"payload":{"kind":"candidate","candidate":{"candidate":""}}}`))
	f.Add([]byte(`{"v":1,"type":"join","room":"r","user":"u","resume":{"peerIndex":3,"term":2,"host":1,"synced":true,"room":"r","token":"abc"}}`))
	f.Add([]byte(`{"v":1,"type":"join","room":"r","user":"u","resume":{"peerIndex":0}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m ClientMessage
		if err := DecodeClientMessage(b, &m); err != nil {
			return
		}
		// Every bound of docs/protocol.md "Signaling: limits" holds for what decodes.
		if rc := m.Resume; rc != nil && (rc.Term > MaxTerm || rc.Index == 0 || len(rc.Token) > MaxResumeTokenLen) {
			t.Fatalf("resume claim out of bounds decoded: %+v", rc)
		}
		if r := m.Replica; r != nil && (r.Term > MaxTerm || r.Clock > maxSafeInt || r.Entities > maxSafeInt) {
			t.Fatalf("report out of bounds decoded: %+v", r)
		}
		if p := m.Payload; p != nil && m.Type == TypeSignal {
			if len(p.SDP) > MaxSDPLen || (p.Candidate != nil && len(p.Candidate.Candidate) > MaxCandidateLen) {
				t.Fatalf("signal payload over the caps decoded: sdp %d bytes", len(p.SDP))
			}
		}
		// What decodes must survive encode + decode unchanged: the Go client
		// encodes with the same struct.
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back ClientMessage
		if err := DecodeClientMessage(enc, &back); err != nil {
			t.Fatalf("decode of re-encoded %s: %v", enc, err)
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, back)
		}
	})
}

func FuzzDecodeServerMessage(f *testing.F) {
	f.Add([]byte(`{"v":1,"type":"joined","room":"lobby","self":2,"peerId":"bob/~2","term":1,"host":1,"members":[{"peerIndex":1,"peerId":"alice/tab-1","kind":"browser","power":50,"mayHost":true,"synced":true}]}`))
	f.Add([]byte(`{"v":1,"type":"member-joined","member":{"peerIndex":2,"peerId":"bob/~2","kind":"bot","power":0,"mayHost":true,"synced":false}}`))
	f.Add([]byte(`{"v":1,"type":"member-left","peerIndex":1,"peerId":"alice/tab-1","reason":"timeout"}`))
	f.Add([]byte(`{"v":1,"type":"host","term":2,"host":2}`))
	f.Add([]byte(`{"v":1,"type":"joined","room":"r","self":3,"peerId":"u/d","term":2,"host":1,"members":[],"pinnedHosts":[],"resumeToken":"q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA"}`))
	f.Add([]byte(`{"v":1,"type":"signal","from":1,"to":2,"payload":{"kind":"offer","sdp":"v=0"}}`))
	f.Add([]byte(`{"v":1,"type":"error","code":"unknown_peer","message":"x","peerIndex":7}`))
	f.Add([]byte(`{"v":1,"type":"host","term":3,"host":2,"resumeToken":"3.q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m ServerMessage
		ev, err := DecodeServerMessage(b, &m)
		if err != nil && ev != nil {
			t.Fatalf("both an event and an error: %#v, %v", ev, err)
		}
		switch ev := ev.(type) {
		case Signal:
			if err := ev.Payload.Validate(); err != nil || ev.From == 0 {
				t.Fatalf("signal event that breaks the payload rules: %+v: %v", ev, err)
			}
		case HostChanged:
			if ev.ResumeToken != m.Resume {
				t.Fatalf("host event lost its resume token: %+v", ev)
			}
		case Joined:
			if ev.Self == 0 {
				t.Fatalf("joined without self: %+v", ev)
			}
		}
	})
}

func BenchmarkDecodeClientMessage(b *testing.B) {
	in := []byte(goldenClientMessages[4])
	var m ClientMessage
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := DecodeClientMessage(in, &m); err != nil {
			b.Fatal(err)
		}
	}
}
