package main

import (
	"flag"

	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/voice"
)

// voiceFlags adds serve's voice flags (docs/protocol.md §10), bound to v.
func voiceFlags(fs *flag.FlagSet, v *server.Voice) {
	fs.BoolVar(&v.On, "voice", true, "proximity voice: a forwarder at POST /voice/{room} (docs/protocol.md §10)")
	fs.Float64Var(&v.Radius, "voice-radius", voice.DefaultRadius, "voice range around a member's avatar, mm (0: everyone hears everyone)")
	fs.IntVar(&v.MaxSubscriptions, "voice-max-subscriptions", voice.DefaultMaxSlots, "most speakers one member hears at once (its slots)")
	fs.IntVar(&v.MaxBitrate, "voice-max-bitrate", voice.DefaultMaxBitrate, "most bit/s of RTP one member may send; beyond it packets are dropped (negative: unbounded)")
	fs.IntVar(&v.MaxSessions, "voice-max-sessions", voice.DefaultMaxSessions, "most voice sessions in one room")
}
