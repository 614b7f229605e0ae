package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// envLoopbackOnly, when set (to anything), makes a loopback signaling URL mean WebRTC on loopback
// only (peer.ICELoopback) instead of this machine's own address (peer.ICELocal): what test rigs
// and benchmarks on a shared machine need, so that nothing they start uses another interface.
// scripts/test.sh and the cmd/concord tests set it; `concord bench` sets it for its children.
const envLoopbackOnly = "CONCORD_LOOPBACK_ONLY"

// onThisMachine is the ICE mode of a peer whose signaling is on loopback and whose --ice is
// unset: ICELocal, so that a browser on the same machine (which offers no loopback candidate)
// can pair with it, or ICELoopback under envLoopbackOnly.
func onThisMachine() peer.ICEMode {
	if os.Getenv(envLoopbackOnly) != "" {
		return peer.ICELoopback
	}
	return peer.ICELocal
}

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
	fs.StringVar(&n.ice, "ice", "", "WebRTC addresses: loopback, local (this machine, off loopback: what a browser on the same machine needs) or any (default: local when the signaling URL is a loopback address — loopback with env "+envLoopbackOnly+"=1 — else any)")
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
		return usageError{fmt.Errorf("--ice %q: want loopback, local or any", n.ice)}
	}
	if mode == peer.ICEAuto && cfg.Server != "" && peer.ICEAuto.Loopback(cfg.Server) {
		mode = onThisMachine()
	}
	if n.publicIP != "" && net.ParseIP(n.publicIP).To4() == nil {
		return usageError{fmt.Errorf("--public-ip %q: not an IPv4 address", n.publicIP)}
	}
	cfg.ICE = mode
	cfg.RelayOnly = n.relayOnly
	cfg.Link = link.Config{
		// pion's warnings and errors, under the peer's own fields (component=host, bot=…) with
		// the pion scope in pionlog.ScopeField; a second "component" would duplicate the key.
		Logger:     pionlog.Level(log),
		UDPMuxAddr: n.udp,
		PublicIP:   n.publicIP,
	}
	return nil
}
