package voice

import (
	"context"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// A browser-shaped offer: microphone, two slots, the data channel.
const seedOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1 2 3\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendrecv\r\na=rtpmap:111 opus/48000/2\r\n" +
	"a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=recvonly\r\na=rtpmap:111 opus/48000/2\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=recvonly\r\na=rtpmap:111 opus/48000/2\r\n" +
	"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:3\r\na=sctp-port:5000\r\n"

// FuzzParseOffer: whatever a client posts as its offer, the shape check does not panic, and what
// it accepts has a microphone section and at most as many slots as sections.
func FuzzParseOffer(f *testing.F) {
	f.Add(seedOffer)
	f.Add("v=0\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, offer string) {
		sh, err := parseOffer(offer)
		if err == nil && sh.slots < 0 {
			t.Fatalf("negative slots %d", sh.slots)
		}
	})
}

func TestParseOffer(t *testing.T) {
	sh, err := parseOffer(seedOffer)
	if err != nil || sh.slots != 2 || sh.micDir.String() != "sendrecv" {
		t.Fatalf("%+v %v", sh, err)
	}
	for _, bad := range []string{"", "v=0\r\n", seedOffer[:len(seedOffer)-120]} {
		if _, err := parseOffer(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// FuzzParseClient: a client's data-channel messages never panic the forwarder; only a mute is
// accepted.
func FuzzParseClient(f *testing.F) {
	for _, s := range []string{`{"t":"mute","muted":true}`, `{"t":"mute"}`, `{"t":"x"}`, `[]`, `{"t":"mute","muted":1}`, ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		muted, err := parseClient(b)
		if err != nil && muted {
			t.Fatal("muted with an error")
		}
	})
}

// FuzzParseStamp: a payload's trailer is read without panicking, and a stamp round-trips.
func FuzzParseStamp(f *testing.F) {
	f.Add([]byte{0xFC}, "a/d")
	f.Fuzz(func(t *testing.T, b []byte, member string) {
		_, _, _ = parseStamp(b)
		if len(member) > 255 {
			return
		}
		at := time.Unix(0, 12345)
		who, got, ok := parseStamp(appendStamp(append([]byte(nil), b...), member, at))
		if !ok || who != member || !got.Equal(at) {
			t.Fatalf("stamp of %q: %q %v %v", member, who, got, ok)
		}
	})
}

// FuzzNegotiate: an offer that passes the shape check goes through pion's SetRemoteDescription
// and the answer without panicking the forwarder.
func FuzzNegotiate(f *testing.F) {
	f.Add(seedOffer)
	fw, err := New(Config{Members: memberSet{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = fw.Close() })
	f.Fuzz(func(t *testing.T, offer string) {
		sh, err := parseOffer(offer)
		if err != nil {
			return
		}
		pc, err := fw.api.NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = fw.negotiate(ctx, &session{pc: pc}, sh, offer)
	})
}
