package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/signaling"
)

// validate checks every option that can be checked without listening or opening the store, so
// that a mistake is reported before the server creates anything (the data directory, a socket):
// a server that fails on its fifth option must not leave ./concord-data behind. A bad option is
// an *OptionError; a missing or unreadable Scenes file is a plain error.
func (o Options) validate() error {
	if o.InterestRadius < 0 {
		return optionError(fmt.Errorf("--interest-radius %d: want a distance in millimetres ≥ 0", o.InterestRadius))
	}
	if _, err := o.Network.check(); err != nil {
		return err
	}
	if (o.Data != "" || o.NATS != "") && o.World.RoomBytes > durable.MaxCheckpoint {
		// A durable room must not outgrow its checkpoint.
		return optionError(fmt.Errorf("--max-world-bytes %d: a durable room's world must fit a checkpoint, at most %d bytes", o.World.RoomBytes, durable.MaxCheckpoint))
	}
	if !o.clustered() && (len(o.Routes) > 0 || o.ClusterAddr != "") {
		return optionError(errors.New("--cluster and --routes need --cluster-name"))
	}
	if err := o.clusterConfig().Check(); err != nil {
		return optionError(err)
	}
	if err := o.checkWorlds(); err != nil {
		return err
	}
	for room := range o.Apps {
		if o.Apps[room] == nil {
			return optionError(fmt.Errorf("server: Options.Apps[%q] is nil", room))
		}
	}
	if o.Network.UDP != "" {
		if _, err := net.ResolveUDPAddr("udp4", o.Network.UDP); err != nil {
			return optionError(fmt.Errorf("--udp %q: %w", o.Network.UDP, err))
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return optionError(errors.New("--tls-cert and --tls-key go together"))
	}
	if err := o.validateTURN(); err != nil {
		return err
	}
	if err := o.checkKeepRooms(); err != nil {
		return err
	}
	if o.clustered() && o.Data == "" && o.NATS == "" {
		return optionError(errors.New("a cluster keeps its rooms in JetStream: --cluster-name needs --data"))
	}
	rooms := make([]signaling.RoomID, 0, len(o.Scenes))
	for room := range o.Scenes {
		rooms = append(rooms, room)
	}
	slices.Sort(rooms)
	for _, room := range rooms {
		// A scene is read again when its room opens (it may change between restarts); here it
		// only has to be there: a typo is a startup error, not a room that never opens.
		f, err := os.Open(o.Scenes[room])
		if err == nil {
			_, err = f.Read(make([]byte, 1))
			_ = f.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("--scene %s=%s: %w", room, o.Scenes[room], err)
		}
	}
	return nil
}

// validateTURN checks --turn, --turn-tls, --turn-host and --turn-ports.
func (o Options) validateTURN() error {
	if o.TURN == "" {
		if o.TURNTLS != "" || o.TURNHost != "" {
			return optionError(errors.New("--turn-tls and --turn-host need --turn"))
		}
		return nil
	}
	host, port, err := net.SplitHostPort(o.TURN)
	if err != nil {
		return optionError(fmt.Errorf("--turn %q: want [IP]:PORT: %w", o.TURN, err))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return optionError(fmt.Errorf("--turn %q: bad port", o.TURN))
	}
	ip := net.ParseIP(host)
	if host != "" && ip == nil {
		return optionError(fmt.Errorf("--turn %q: want an IP address, not a name", o.TURN))
	}
	if (host == "" || ip.IsUnspecified()) && o.Network.PublicIP == "" {
		return optionError(fmt.Errorf("--turn %q listens on every interface: give --public-ip, the address members are told to relay through (or --turn IP:PORT)", o.TURN))
	}
	if o.TURNTLS != "" && o.TLSCert == "" {
		return optionError(errors.New("--turn-tls needs --tls-cert and --tls-key"))
	}
	if o.TURNHost != "" && o.TURNTLS == "" {
		return optionError(errors.New("--turn-host names the turns: address: it needs --turn-tls"))
	}
	if strings.ContainsAny(o.TURNHost, ":/?@ ") {
		return optionError(fmt.Errorf("--turn-host %q: want a host name (or IPv4 address), no port or scheme", o.TURNHost))
	}
	if o.TURNPorts != "" {
		if _, _, err := parsePortRange(o.TURNPorts); err != nil {
			return optionError(err)
		}
	}
	return nil
}

// parsePortRange parses --turn-ports, MIN-MAX with 1 ≤ MIN ≤ MAX ≤ 65535.
func parsePortRange(v string) (int, int, error) {
	lo, hi, ok := strings.Cut(v, "-")
	minP, err1 := strconv.Atoi(lo)
	maxP, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || minP < 1 || maxP > 65535 || minP > maxP {
		return 0, 0, fmt.Errorf("--turn-ports %q: want MIN-MAX, 1 ≤ MIN ≤ MAX ≤ 65535", v)
	}
	return minP, maxP, nil
}
