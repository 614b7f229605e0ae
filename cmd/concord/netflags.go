package main

import (
	"flag"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// peerNet is how a Go peer's WebRTC links reach the network (flags --ice, --udp, --public-ip,
// --relay-only).
type peerNet struct {
	ice       string
	udp       string
	publicIP  string
	relayOnly bool
}

// addICEFlag adds --ice and --relay-only (host, bot, serve).
func (n *peerNet) addICEFlag(fs *flag.FlagSet) {
	fs.StringVar(&n.ice, "ice", "", "WebRTC addresses: loopback or any (default: loopback when the signaling URL is a loopback address, else any)")
	fs.BoolVar(&n.relayOnly, "relay-only", false, "use relay (TURN) candidates only, as a browser's iceTransportPolicy \"relay\"")
}

// addAddrFlags adds --udp and --public-ip (host, serve).
func (n *peerNet) addAddrFlags(fs *flag.FlagSet) {
	fs.StringVar(&n.udp, "udp", "", "UDP address of the one socket all WebRTC links of this process share (default: an ephemeral port on the signaling interface)")
	fs.StringVar(&n.publicIP, "public-ip", "", "IPv4 address advertised in host candidates instead of the interface's (1:1 NAT of a cloud VM); on serve also the TURN relay address")
}

// config fills the network fields of a peer.Config.
func (n peerNet) config(log zerolog.Logger, cfg *peer.Config) error {
	mode, err := peer.ParseICEMode(n.ice)
	if err != nil {
		return usageError{fmt.Errorf("--ice %q: want loopback or any", n.ice)}
	}
	if n.publicIP != "" && net.ParseIP(n.publicIP).To4() == nil {
		return usageError{fmt.Errorf("--public-ip %q: not an IPv4 address", n.publicIP)}
	}
	cfg.ICE = mode
	cfg.RelayOnly = n.relayOnly
	cfg.Link = link.Config{
		Logger:     log.With().Str("component", "pion").Logger().Level(zerolog.ErrorLevel),
		UDPMuxAddr: n.udp,
		PublicIP:   n.publicIP,
	}
	return nil
}
