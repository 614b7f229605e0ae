package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gorilla/websocket"

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

// peerNet is how a Go peer reaches the network: its WebRTC links (flags --ice, --udp,
// --public-ip, --relay-only) and its signaling connection (--ca).
type peerNet struct {
	ice       string
	udp       string
	publicIP  string
	relayOnly bool
	// ca is a PEM file of certificates the signaling connection trusts besides the system's
	// (a self-signed server); "" trusts the system's (and SSL_CERT_FILE's) only.
	ca string
}

// addCAFlag adds --ca (host, bot).
func (n *peerNet) addCAFlag(fs *flag.FlagSet) {
	fs.StringVar(&n.ca, "ca", "", "PEM `FILE` of CA certificates to trust for a wss:// (https://) server besides the system's, e.g. a self-signed --tls-cert")
}

// signalingDialer is the websocket dialer of a peer that trusts the certificates in the PEM
// file ca besides the system's: the signaling client's default dialer (10 s handshake, no proxy)
// with those roots.
func signalingDialer(ca string) (*websocket.Dialer, error) {
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("--ca: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s: no PEM certificate in it", ca)
	}
	return &websocket.Dialer{HandshakeTimeout: 10 * time.Second, TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}, nil
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

// check validates --ice and --public-ip.
func (n peerNet) check() (peer.ICEMode, error) {
	mode, err := peer.ParseICEMode(n.ice)
	if err != nil {
		return mode, usageError{fmt.Errorf("--ice %q: want loopback, local or any", n.ice)}
	}
	if n.publicIP != "" && net.ParseIP(n.publicIP).To4() == nil {
		return mode, usageError{fmt.Errorf("--public-ip %q: not an IPv4 address", n.publicIP)}
	}
	return mode, nil
}

// config fills the network fields of a peer.Config.
func (n peerNet) config(log zerolog.Logger, cfg *peer.Config) error {
	mode, err := n.check()
	if err != nil {
		return err
	}
	if mode == peer.ICEAuto && cfg.Server != "" && peer.ICEAuto.Loopback(cfg.Server) {
		mode = onThisMachine()
	}
	if n.ca != "" {
		if cfg.SignalingConfig.Dialer, err = signalingDialer(n.ca); err != nil {
			return err
		}
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
