package link

import "github.com/pion/webrtc/v4"

// Signal kinds.
const (
	SignalOffer     = "offer"
	SignalAnswer    = "answer"
	SignalCandidate = "candidate"
)

// Signal is one signaling message between the two ends of a Conn: an SDP
// offer or answer, or one trickled ICE candidate. It marshals to JSON as
// {"kind":"offer","sdp":"…"} or {"kind":"candidate","candidate":{…}}, where
// the candidate has the browser's RTCIceCandidateInit shape, so a browser
// client can produce and consume it without translation. SDP is passed through
// unmodified (no munging), which keeps Chromium interoperable.
type Signal struct {
	Kind      string                   `json:"kind"`
	SDP       string                   `json:"sdp,omitempty"`
	Candidate *webrtc.ICECandidateInit `json:"candidate,omitempty"`
}
