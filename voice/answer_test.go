package voice

import (
	"context"
	"testing"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
)

// offerOf makes a client's complete offer: the microphone section in direction mic, k slots,
// the voice data channel.
func offerOf(t *testing.T, api *webrtc.API, mic webrtc.RTPTransceiverDirection, k int) string {
	t.Helper()
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	if mic == webrtc.RTPTransceiverDirectionSendrecv {
		track, _ := webrtc.NewTrackLocalStaticRTP(opusCodec.RTPCodecCapability, "mic", "s")
		_, err = pc.AddTransceiverFromTrack(track, webrtc.RTPTransceiverInit{Direction: mic})
	} else {
		_, err = pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: mic})
	}
	if err != nil {
		t.Fatal(err)
	}
	for range k {
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pc.CreateDataChannel("voice", nil); err != nil {
		t.Fatal(err)
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-g
	return pc.LocalDescription().SDP
}

// TestAnswerShape: the answer keeps the offer's order: the microphone received (or inactive
// without one), the first MaxSlots slots sent, the rest inactive, the data channel accepted
// (docs/protocol.md §10).
func TestAnswerShape(t *testing.T) {
	fw, err := New(Config{Members: memberSet{}, MaxSlots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	for _, tc := range []struct {
		mic  webrtc.RTPTransceiverDirection
		k    int
		want []string
	}{
		{webrtc.RTPTransceiverDirectionSendrecv, 3, []string{"recvonly", "sendonly", "sendonly", "inactive", "application"}},
		{webrtc.RTPTransceiverDirectionRecvonly, 2, []string{"inactive", "sendonly", "sendonly", "application"}},
		{webrtc.RTPTransceiverDirectionSendrecv, 1, []string{"recvonly", "sendonly", "application"}},
	} {
		offer := offerOf(t, fw.api, tc.mic, tc.k)
		sh, err := parseOffer(offer)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := fw.api.NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s := &session{pc: pc}
		answer, err := fw.negotiate(ctx, s, sh, offer)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var d sdp.SessionDescription
		if err := d.UnmarshalString(answer); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range d.MediaDescriptions {
			if m.MediaName.Media == "application" {
				got = append(got, "application")
				continue
			}
			got = append(got, direction(m).String())
		}
		if len(got) != len(tc.want) {
			t.Fatalf("mic %s, %d slots: answer %v, want %v", tc.mic, tc.k, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("mic %s, %d slots: answer %v, want %v", tc.mic, tc.k, got, tc.want)
			}
		}
		if want := min(tc.k, 2); len(s.slots) != want || s.slots[0].mid != "1" {
			t.Fatalf("%d slots, first mid %q", len(s.slots), s.slots[0].mid)
		}
		_ = pc.Close()
	}
}
