package server

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// Voice configures the voice forwarder (docs/protocol.md §10). The zero value is off.
type Voice struct {
	// On serves POST /voice/{room} (--voice); off, it answers 503.
	On bool
	// Radius is the range around a member's avatar, mm (--voice-radius; 0: everyone hears
	// everyone).
	Radius float64
	// MaxSubscriptions bounds a member's slots (--voice-max-subscriptions; 0: voice's default, 8).
	MaxSubscriptions int
	// MaxBitrate bounds a publisher's RTP, bit/s (--voice-max-bitrate; 0: voice's default,
	// 64000; negative: unbounded).
	MaxBitrate int
	// MaxSessions bounds the sessions of a room (--voice-max-sessions; 0: voice's default, 64).
	MaxSessions int
	// MaxRelayed bounds, in a cluster, the voice requests of other nodes this node runs at once
	// (--voice-max-relayed; 0: DefaultVoiceMaxRelayed, 32; docs/protocol.md §10 "In a cluster").
	MaxRelayed int
	// AvatarPos reads where an avatar of room stands, for proximity (nil: the arena demo's pos
	// property, in mm). A program whose own game (Options.Apps) has voice sets it for its schema.
	AvatarPos func(room signaling.RoomID, w *peer.World, e peer.Entity) (voice.Pos, bool)
}

// arenaVoicePos is the arena's avatar position: its pos property, millimetres.
func arenaVoicePos(_ signaling.RoomID, w *peer.World, e peer.Entity) (voice.Pos, bool) {
	b, ok := w.Get(e, arena.AvatarPos)
	if !ok {
		return voice.Pos{}, false
	}
	v := arena.ParseVec(b)
	return voice.Pos{X: float64(v.X), Y: float64(v.Y), Known: true}, true
}

// voiceServer is serve's forwarder with its socket and its followers.
type voiceServer struct {
	api *link.API
	pos *voice.WorldPositions
	f   *voice.Forwarder
	// relay routes requests to the rooms' owners in a cluster (voicecluster.go); nil outside one.
	relay *voiceRelay
	// followAt is the URL the followers dial: the server's inner door (Server.innerURL), set
	// before the server serves.
	followAt string
}

// openVoiceSocket opens the forwarder's UDP socket with the dedicated hosts' network settings,
// before TURN starts (so the relay knows its port). nil when voice is off.
func openVoiceSocket(o Options, log zerolog.Logger, addr *net.TCPAddr) (*voiceServer, int, error) {
	if !o.Voice.On {
		return nil, 0, nil
	}
	vo := o
	if h, _, err := net.SplitHostPort(o.Network.UDP); err == nil {
		vo.Network.UDP = net.JoinHostPort(h, "0") // --udp's port is the first host's
	}
	cfg, err := dedicatedHostConfig(log, vo, signaling.RoomID(o.Room), addr)
	if err != nil {
		return nil, 0, err
	}
	cfg.Link.Logger = pionlog.Level(log.With().Str("component", "voice").Logger())
	api, err := peer.LinkAPI(cfg)
	if err != nil {
		return nil, 0, err
	}
	port := 0
	if ua, ok := api.UDPMuxAddr().(*net.UDPAddr); ok {
		port = ua.Port
	}
	return &voiceServer{api: api}, port, nil
}

// start runs the forwarder over signaling sig; rooms hosted here are read from their dedicated
// host, the others through a follower that dials the server's inner door (followAt).
func (v *voiceServer) start(s *Server, o Options, addr *net.TCPAddr, cfg voice.Config) (http.Handler, error) {
	if v == nil {
		return (*voice.Forwarder)(nil).Handler(), nil
	}
	mapi, err := voice.NewMediaAPI(v.api)
	if err != nil {
		return nil, err
	}
	avatarPos := o.Voice.AvatarPos
	if avatarPos == nil {
		avatarPos = arenaVoicePos
	}
	v.pos = &voice.WorldPositions{Logger: s.log, AvatarPos: avatarPos,
		Host: func(room signaling.RoomID) *peer.Peer {
			s.hostMu.Lock()
			defer s.hostMu.Unlock()
			for _, d := range s.hosts {
				if d.room == room {
					return d.peer
				}
			}
			return nil
		},
		Follow: func(room signaling.RoomID) (peer.Config, bool) {
			pc, err := dedicatedHostConfig(s.log.With().Str("component", "voice-follower").Logger(), o, room, addr)
			if err != nil {
				return peer.Config{}, false
			}
			// The door the dedicated hosts use (a loopback one without TLS under TLS or on a
			// wildcard address, made for voice when there are no dedicated hosts), else the
			// public one: under TLS the public one's certificate does not name 127.0.0.1.
			pc.Server = v.followAt
			// A host-kind member that declines hosting, as internal/follow's followers: never
			// elected, and no avatar of its own in the room.
			pc.User, pc.Device, pc.Kind, pc.NoHost = voice.FollowerUser, "forwarder", signaling.KindHost, true
			pc.App, pc.Interest = arena.New(arena.Config{}), nil
			now := o.Now()
			if pc.Token, err = signaling.IssueToken(o.tokenKey(), signaling.Claims{Room: room, User: pc.User, Device: pc.Device,
				Kind: signaling.KindHost, IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
				return peer.Config{}, false
			}
			return pc, true
		}}
	cfg.API, cfg.Flush, cfg.Positions = mapi, v.api.Flush, v.pos
	cfg.Radius, cfg.MaxSlots, cfg.MaxBitrate, cfg.MaxSessions = o.Voice.Radius, o.Voice.MaxSubscriptions, o.Voice.MaxBitrate, o.Voice.MaxSessions
	if v.f, err = voice.New(cfg); err != nil {
		return nil, err
	}
	return v.f.Handler(), nil
}

// close stops the forwarder, its followers and its socket.
func (v *voiceServer) close() {
	if v == nil {
		return
	}
	v.relay.close()
	if v.f != nil {
		_ = v.f.Close()
	}
	if v.pos != nil {
		v.pos.Close()
	}
	_ = v.api.Close()
}

// checkVoice checks the voice options (New).
func checkVoice(v Voice) error {
	if v.Radius < 0 || v.MaxSubscriptions < 0 || v.MaxSessions < 0 || v.MaxRelayed < 0 {
		return optionError(fmt.Errorf("--voice-radius, --voice-max-subscriptions, --voice-max-sessions and --voice-max-relayed must not be negative"))
	}
	return nil
}

// voiceCORS admits the page origins of --origin to the voice endpoint: a page on another origin
// posts its offer with a token and reads the Location of its session, which needs CORS (the
// request is not a simple one, so the browser asks first with OPTIONS). A request from an origin
// the policy refuses gets 403; one without Origin (a Go client) passes.
func voiceCORS(p *originPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !p.allowed(r) {
			http.Error(w, refusedOrigin+": "+origin+" (serve --origin)", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Location")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "POST, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
