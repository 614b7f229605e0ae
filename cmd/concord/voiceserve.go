package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// voiceOptions are serve's voice flags (docs/protocol.md §10).
type voiceOptions struct {
	on          bool
	radius      float64
	maxSlots    int
	maxBitrate  int
	maxSessions int
}

func (v *voiceOptions) addFlags(fs *flag.FlagSet) {
	fs.BoolVar(&v.on, "voice", true, "proximity voice: a forwarder at POST /voice/{room} (docs/protocol.md §10)")
	fs.Float64Var(&v.radius, "voice-radius", voice.DefaultRadius, "voice range around a member's avatar, mm (0: everyone hears everyone)")
	fs.IntVar(&v.maxSlots, "voice-max-subscriptions", voice.DefaultMaxSlots, "most speakers one member hears at once (its slots)")
	fs.IntVar(&v.maxBitrate, "voice-max-bitrate", voice.DefaultMaxBitrate, "most bit/s of RTP one member may send; beyond it packets are dropped")
	fs.IntVar(&v.maxSessions, "voice-max-sessions", voice.DefaultMaxSessions, "most voice sessions in one room")
}

// voiceServer is serve's forwarder with its socket and its followers.
type voiceServer struct {
	api *link.API
	pos *voice.WorldPositions
	f   *voice.Forwarder
}

// openVoiceSocket opens the forwarder's UDP socket with the dedicated hosts' network settings,
// before TURN starts (so the relay knows its port). nil when voice is off.
func openVoiceSocket(o serveOptions, log zerolog.Logger, addr *net.TCPAddr) (*voiceServer, int, error) {
	if !o.voice.on {
		return nil, 0, nil
	}
	vo := o
	if h, _, err := net.SplitHostPort(o.net.udp); err == nil {
		vo.net.udp = net.JoinHostPort(h, "0") // --udp's port is the first host's
	}
	cfg, err := dedicatedHostConfig(log.With().Str("component", "voice").Logger(), vo, signaling.RoomID(o.room), addr)
	if err != nil {
		return nil, 0, err
	}
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
// host, the others through a follower that dials the server at url.
func (v *voiceServer) start(s *server, o serveOptions, url string, addr *net.TCPAddr, cfg voice.Config) (http.Handler, error) {
	if v == nil {
		return (*voice.Forwarder)(nil).Handler(), nil
	}
	mapi, err := voice.NewMediaAPI(v.api)
	if err != nil {
		return nil, err
	}
	v.pos = &voice.WorldPositions{Logger: s.log,
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
			pc.Server, pc.User, pc.Device, pc.Kind = url, voice.FollowerUser, "forwarder", signaling.KindBot
			pc.App, pc.Interest = arena.New(arena.Config{}), nil
			if o.secret != "" {
				now := time.Now()
				if pc.Token, err = signaling.IssueToken([]byte(o.secret), signaling.Claims{Room: room, User: pc.User, Device: pc.Device,
					Kind: signaling.KindBot, IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
					return peer.Config{}, false
				}
			}
			return pc, true
		}}
	cfg.API, cfg.Flush, cfg.Positions = mapi, v.api.Flush, v.pos
	cfg.Radius, cfg.MaxSlots, cfg.MaxBitrate, cfg.MaxSessions = o.voice.radius, o.voice.maxSlots, o.voice.maxBitrate, o.voice.maxSessions
	if o.voice.maxBitrate == 0 {
		cfg.MaxBitrate = -1
	}
	if o.voice.radius < 0 || o.voice.maxSlots < 1 || o.voice.maxSessions < 1 || o.voice.maxBitrate < 0 {
		return nil, usageError{fmt.Errorf("--voice-radius ≥ 0, --voice-max-subscriptions ≥ 1, --voice-max-sessions ≥ 1, --voice-max-bitrate ≥ 0")}
	}
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
	if v.f != nil {
		_ = v.f.Close()
	}
	if v.pos != nil {
		v.pos.Close()
	}
	_ = v.api.Close()
}

func scheme(tlsOn bool) string {
	if tlsOn {
		return "https"
	}
	return "http"
}
