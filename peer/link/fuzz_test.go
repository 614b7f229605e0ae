package link

import (
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
	"github.com/pion/transport/v5/vnet"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"
)

// sampleOffer is a real offer from this package (pion v4.2.20).
const sampleOffer = "v=0\r\no=- 1111289912596173680 1795292081 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
	"a=msid-semantic:WMS *\r\n" +
	"a=fingerprint:sha-256 6C:84:59:A3:60:30:C7:3B:97:2F:4A:8C:3F:42:5D:92:3F:B8:CD:3D:0E:68:01:23:13:81:A5:90:29:A0:C0:32\r\n" +
	"a=extmap-allow-mixed\r\na=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n" +
	"c=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\na=sendrecv\r\na=sctp-port:5000\r\n" +
	"a=max-message-size:16640\r\na=ice-ufrag:kacGRrOVPrJMFQwY\r\na=ice-pwd:nqCRuPAdrlXzBdRXyEPOttePHQOouYbp\r\n"

const sampleCandidate = "candidate:2878742611 1 udp 2130706431 127.0.0.1 47664 typ host ufrag kacGRrOVPrJMFQwY"

// FuzzHandleSignal feeds arbitrary signals to a fresh answerer: nothing may
// panic, whatever the SDP or candidate text. ICE runs on an isolated vnet, so
// candidates from the fuzzer never reach a real socket.
func FuzzHandleSignal(f *testing.F) {
	f.Add(SignalOffer, sampleOffer, sampleCandidate)
	f.Add(SignalOffer, sampleOffer+"a=candidate:1 1 udp 2130706431 10.0.0.9 9 typ host\r\n", "")
	f.Add(SignalAnswer, sampleOffer, sampleCandidate)
	f.Add(SignalCandidate, "", "candidate:1 1 tcp 1 ::1 0 typ srflx raddr 0.0.0.0 rport 0")
	f.Add(SignalOffer, "v=0\r\n", "candidate:")
	f.Add("bogus", "", "")

	vn, err := vnet.NewNet(&vnet.NetConfig{})
	if err != nil {
		f.Fatal(err)
	}
	api, err := NewAPI(Config{
		Logger:           zerolog.Nop(),
		AllowNonLoopback: true, // vnet interfaces are not "lo"; vnet never touches a real network.
		Net:              vn,
		DisableUDPMux:    true,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = api.Close() })

	f.Fuzz(func(t *testing.T, kind, sdp, cand string) {
		// A hang is a bug too: dump the goroutines and fail.
		defer test.TimeOut(20 * time.Second).Stop()
		c, err := api.NewAnswerer(ConnConfig{Signal: func(Signal) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		candidate := Signal{Kind: SignalCandidate, Candidate: &webrtc.ICECandidateInit{Candidate: cand}}
		_ = c.HandleSignal(candidate) // Queued before the description.
		_ = c.HandleSignal(Signal{Kind: kind, SDP: sdp, Candidate: candidate.Candidate})
		_ = c.HandleSignal(candidate)
	})
}
