package sigclient

import "fmt"

// ICEServer is one STUN or TURN server in the shape of the browser's
// RTCIceServer (and pion's webrtc.ICEServer): the joined message hands a list
// of them to every member, which passes it to its peer connections as is.
type ICEServer struct {
	// URLs are stun:, turn: or turns: URLs of one server.
	URLs []string `json:"urls"`
	// Username and Credential authenticate to a TURN server; empty for STUN.
	Username   string `json:"username,omitempty"`
	Credential string `json:"credential,omitempty"`
}

// ICEServersFunc returns the ICE servers for one member of a room: typically
// time-limited TURN credentials bound to the member's identity. It runs on the
// hub's goroutine for every join, so it must be fast and must not block.
type ICEServersFunc func(room RoomID, id Identity) []ICEServer

// Limits on what a client accepts from a server in iceServers.
const (
	MaxICEServers    = 16
	maxICEServerURLs = 8
)

func checkICEServers(servers []ICEServer) error {
	if len(servers) > MaxICEServers {
		return fmt.Errorf("%w: %d ICE servers, the limit is %d", ErrBadMessage, len(servers), MaxICEServers)
	}
	for _, s := range servers {
		if len(s.URLs) == 0 || len(s.URLs) > maxICEServerURLs {
			return fmt.Errorf("%w: an ICE server with %d URLs (1..%d)", ErrBadMessage, len(s.URLs), maxICEServerURLs)
		}
	}
	return nil
}

// Candidate types of a selected candidate pair (RFC 8445 §5.1.1).
const (
	CandidateHost  = "host"
	CandidateSrflx = "srflx"
	CandidatePrflx = "prflx"
	CandidateRelay = "relay"
)

// LinkTypes are the candidate types of the selected pair of a member's link to
// the host, as the member reports it: "host", "srflx", "prflx" or "relay" on
// each end. /api/rooms shows them, so an operator sees who plays through the
// relay.
type LinkTypes struct {
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

func (l *LinkTypes) check() error {
	for _, t := range [...]string{l.Local, l.Remote} {
		switch t {
		case CandidateHost, CandidateSrflx, CandidatePrflx, CandidateRelay:
		default:
			return fmt.Errorf("%w: link candidate type %q (want host, srflx, prflx or relay)", ErrBadMessage, t)
		}
	}
	return nil
}
