package sigclient

import (
	"reflect"
	"testing"
)

// noticeSeeds are membership notices in the server's form (encoded by its own structs) and
// near misses of it, each of which must decode as encoding/json decodes it.
func noticeSeeds() [][]byte {
	seeds := [][]byte{
		MustMarshal(MemberSyncedMsg{V: ProtocolVersion, Type: TypeMemberSynced, PeerIndex: 513, Term: 7}),
		MustMarshal(MemberSyncedMsg{V: ProtocolVersion, Type: TypeMemberSynced, PeerIndex: 2}),
		MustMarshal(MemberJoinedMsg{V: ProtocolVersion, Type: TypeMemberJoined, Member: Member{Index: 1024, ID: "bot1024/d", Kind: KindBot}}),
		MustMarshal(MemberJoinedMsg{V: ProtocolVersion, Type: TypeMemberJoined, Member: Member{Index: 3, ID: "alice/tab-1", Kind: KindBrowser, Power: -5, MayHost: true, Synced: true, SyncedTerm: 4}}),
		[]byte(`{"v":1,"type":"member-synced","peerIndex":0}`),
		[]byte(`{"v":1,"type":"member-synced","peerIndex":01}`),
		[]byte(`{"v":1,"type":"member-synced","peerIndex":5 }`),
		[]byte(`{"v":1,"type":"member-synced","peerIndex":5,"term":2,"term":3}`),
		[]byte(`{"v":1,"type":"member-synced","peerIndex":99999999999999999999}`),
		[]byte(`{"v":1,"type":"member-joined","member":{"peerIndex":2,"peerId":"b\u00e9b/d","kind":"bot","power":0,"mayHost":true,"synced":false}}`),
		[]byte(`{"v":1,"type":"member-joined","member":{"peerIndex":2,"peerId":"bob/d","kind":"bot","power":-0,"mayHost":true,"synced":false}}`),
		[]byte(`{"v":1,"type":"member-joined","member":{"peerIndex":2,"peerId":"bob/d","kind":"bot","power":1e2,"mayHost":true,"synced":false}}`),
		[]byte(`{"v":2,"type":"member-synced","peerIndex":5}`),
	}
	return seeds
}

// TestNoticesDecodedWithoutJSON: the server's own member-joined and member-synced messages take
// decodeNotice, not encoding/json, and decode as encoding/json decodes them.
func TestNoticesDecodedWithoutJSON(t *testing.T) {
	for _, b := range noticeSeeds()[:4] {
		var fast ServerMessage
		if _, ok := decodeNotice(b, &fast); !ok {
			t.Fatalf("the server's notice %s is left to encoding/json", b)
		}
		sameAsJSON(t, b)
	}
	for _, b := range noticeSeeds()[4:] { // near misses: taken by either decoder, decoded alike
		sameAsJSON(t, b)
	}
}

// FuzzDecodeNoticeAsJSON: whatever decodeNotice decodes, encoding/json decodes to the same event
// and message, without an error.
func FuzzDecodeNoticeAsJSON(f *testing.F) {
	for _, b := range noticeSeeds() {
		f.Add(b)
	}
	f.Fuzz(sameAsJSON)
}

func sameAsJSON(t *testing.T, b []byte) {
	var fast, slow ServerMessage
	fev, ok := decodeNotice(b, &fast)
	sev, err := decodeServerJSON(b, &slow)
	if !ok {
		got, gotErr := DecodeServerMessage(b, &fast)
		if !reflect.DeepEqual(got, sev) || (gotErr == nil) != (err == nil) {
			t.Fatalf("%q: DecodeServerMessage gave %#v, %v; encoding/json %#v, %v", b, got, gotErr, sev, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q decoded to %#v, which encoding/json refuses: %v", b, fev, err)
	}
	if !reflect.DeepEqual(fev, sev) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: decoded to %#v (%+v), encoding/json to %#v (%+v)", b, fev, fast, sev, slow)
	}
}

// BenchmarkDecodeNotice: a burst's membership notices, the server's form (every member decodes
// two per join).
func BenchmarkDecodeNotice(b *testing.B) {
	for _, c := range []struct {
		name string
		msg  []byte
	}{{"synced", noticeSeeds()[0]}, {"joined", noticeSeeds()[2]}} {
		b.Run(c.name, func(b *testing.B) {
			var m ServerMessage
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeServerMessage(c.msg, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/json", func(b *testing.B) {
			var m ServerMessage
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeServerJSON(c.msg, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
