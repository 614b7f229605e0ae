package peer

import (
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// Transport makes links to other members. The pion transport makes WebRTC connections; tests may
// plug in another.
type Transport interface {
	Connect(cfg LinkConfig) (Link, error)
}

// LinkConfig describes one link to make.
type LinkConfig struct {
	// Local is this member's index, Remote the other end's.
	Local   PeerIndex
	Remote  PeerIndex
	Session uint64
	// Offerer is true on the member that starts the connection (the non-host side).
	Offerer bool
	// Signal sends a signaling payload to Remote; it may be called from any goroutine.
	Signal  func(sigclient.SignalPayload) error
	Handler link.Handler
	Logger  zerolog.Logger
	// ICEServers are the STUN/TURN servers signaling handed this member; RelayOnly restricts
	// ICE to relay candidates.
	ICEServers []sigclient.ICEServer
	RelayOnly  bool
	// Trace, when set, is told of the link's setup steps (link.ConnConfig.Trace); nil: none.
	Trace func(event string)
}

// InlineTransport is a Transport whose Connect and HandleSignal do no I/O and return at once (an
// in-memory one, MemoryTransport): a peer answers its offers on its loop, in the order they came,
// instead of on a worker (answer.go), so that a deterministic test stays deterministic.
type InlineTransport interface {
	Transport
	// AnswersInline reports whether offers are answered on the loop.
	AnswersInline() bool
}

// Link is a link.Link that is set up through signaling.
type Link interface {
	link.Link
	// HandleSignal consumes a signaling payload from the remote end.
	HandleSignal(sigclient.SignalPayload) error
	// Ready is closed when both data channels are open.
	Ready() <-chan struct{}
}

// PionTransport makes WebRTC links with pion through a link.API.
type PionTransport struct{ API *link.API }

// Connect starts a pion connection as offerer or answerer.
func (t PionTransport) Connect(cfg LinkConfig) (Link, error) {
	cc := link.ConnConfig{
		Handler:    cfg.Handler,
		Logger:     cfg.Logger,
		ICEServers: toPionICEServers(cfg.ICEServers),
		RelayOnly:  cfg.RelayOnly,
		Trace:      cfg.Trace,
		Signal: func(s link.Signal) error {
			return cfg.Signal(toPayload(s, cfg.Session))
		},
	}
	var c *link.Conn
	var err error
	if cfg.Offerer {
		c, err = t.API.NewOfferer(cc)
	} else {
		c, err = t.API.NewAnswerer(cc)
	}
	if err != nil {
		return nil, err
	}
	return pionLink{c}, nil
}

// Flush sends what the API's shared UDP socket has queued (link.API.Flush); the peer loop calls
// it after every network flush.
func (t PionTransport) Flush() { t.API.Flush() }

// flusher is a Transport that batches its sends until Flush.
type flusher interface{ Flush() }

type pionLink struct{ *link.Conn }

func (l pionLink) HandleSignal(p sigclient.SignalPayload) error {
	return l.Conn.HandleSignal(fromPayload(p))
}

func toPayload(s link.Signal, session uint64) sigclient.SignalPayload {
	p := sigclient.SignalPayload{Kind: sigclient.SignalKind(s.Kind), SDP: s.SDP, Session: session}
	if c := s.Candidate; c != nil {
		p.Candidate = &sigclient.ICECandidate{
			Candidate: c.Candidate, SDPMid: c.SDPMid, SDPMLineIndex: c.SDPMLineIndex, UsernameFragment: c.UsernameFragment,
		}
	}
	return p
}

func fromPayload(p sigclient.SignalPayload) link.Signal {
	s := link.Signal{Kind: string(p.Kind), SDP: p.SDP}
	if c := p.Candidate; c != nil {
		s.Candidate = &webrtc.ICECandidateInit{
			Candidate: c.Candidate, SDPMid: c.SDPMid, SDPMLineIndex: c.SDPMLineIndex, UsernameFragment: c.UsernameFragment,
		}
	}
	return s
}
