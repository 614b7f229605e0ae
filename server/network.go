package server

import (
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// check validates ICE and PublicIP.
func (n Network) check() (peer.ICEMode, error) {
	mode, err := peer.ParseICEMode(n.ICE)
	if err != nil {
		return mode, optionError(fmt.Errorf("--ice %q: want loopback, local or any", n.ICE))
	}
	if n.PublicIP != "" && net.ParseIP(n.PublicIP).To4() == nil {
		return mode, optionError(fmt.Errorf("--public-ip %q: not an IPv4 address", n.PublicIP))
	}
	return mode, nil
}

// onThisMachine is the ICE mode of a dedicated host whose server listens on loopback:
// ICELocal, so that a browser on the same machine (which offers no loopback candidate) can pair
// with it, or ICELoopback under LoopbackOnly.
func (n Network) onThisMachine() peer.ICEMode {
	if n.LoopbackOnly {
		return peer.ICELoopback
	}
	return peer.ICELocal
}

// config fills the network fields of a dedicated host's peer.Config.
func (n Network) config(log zerolog.Logger, cfg *peer.Config) error {
	mode, err := n.check()
	if err != nil {
		return err
	}
	if mode == peer.ICEAuto && cfg.Server != "" && peer.ICEAuto.Loopback(cfg.Server) {
		mode = n.onThisMachine()
	}
	cfg.ICE = mode
	cfg.RelayOnly = n.RelayOnly
	cfg.Link = link.Config{
		// pion's warnings and errors, under the peer's own fields (component=host) with the
		// pion scope in pionlog.ScopeField; a second "component" would duplicate the key.
		Logger:     pionlog.Level(log),
		UDPMuxAddr: n.UDP,
		PublicIP:   n.PublicIP,
	}
	return nil
}
