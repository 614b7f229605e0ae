package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/concordrtc/concord/signaling"
)

// validate checks every flag of serve that can be checked without listening or opening the
// store, so that a mistake is reported before serve creates anything (the data directory, a
// socket): a server that fails on its fifth flag must not leave ./concord-data behind. A bad flag
// is a usageError; a missing or unreadable --scene file is a plain error (exit 1).
func (o serveOptions) validate() error {
	if o.interestRadius < 0 {
		return usageError{fmt.Errorf("--interest-radius %d: want a distance in millimetres ≥ 0", o.interestRadius)}
	}
	if _, err := o.net.check(); err != nil {
		return err
	}
	if err := checkWorldFlags(o); err != nil {
		return err
	}
	if o.net.udp != "" {
		if _, err := net.ResolveUDPAddr("udp4", o.net.udp); err != nil {
			return usageError{fmt.Errorf("--udp %q: %w", o.net.udp, err)}
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	if err := o.validateTURN(); err != nil {
		return err
	}
	if err := o.checkKeepRooms(); err != nil {
		return err
	}
	if o.clustered() && o.data == "" && o.natsURL == "" {
		return usageError{errors.New("a cluster keeps its rooms in JetStream: --cluster-name needs --data")}
	}
	rooms := make([]signaling.RoomID, 0, len(o.scenes))
	for room := range o.scenes {
		rooms = append(rooms, room)
	}
	slices.Sort(rooms)
	for _, room := range rooms {
		// A scene is read again when its room opens (it may change between restarts); here it
		// only has to be there: a typo is a startup error, not a room that never opens.
		f, err := os.Open(o.scenes[room])
		if err == nil {
			_, err = f.Read(make([]byte, 1))
			_ = f.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("--scene %s=%s: %w", room, o.scenes[room], err)
		}
	}
	return nil
}

// validateTURN checks --turn, --turn-tls, --turn-host and --turn-ports.
func (o serveOptions) validateTURN() error {
	if o.turnAddr == "" {
		if o.turnTLSAddr != "" || o.turnHost != "" {
			return usageError{errors.New("--turn-tls and --turn-host need --turn")}
		}
		return nil
	}
	host, port, err := net.SplitHostPort(o.turnAddr)
	if err != nil {
		return usageError{fmt.Errorf("--turn %q: want [IP]:PORT: %w", o.turnAddr, err)}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usageError{fmt.Errorf("--turn %q: bad port", o.turnAddr)}
	}
	ip := net.ParseIP(host)
	if host != "" && ip == nil {
		return usageError{fmt.Errorf("--turn %q: want an IP address, not a name", o.turnAddr)}
	}
	if (host == "" || ip.IsUnspecified()) && o.net.publicIP == "" {
		return usageError{fmt.Errorf("--turn %q listens on every interface: give --public-ip, the address members are told to relay through (or --turn IP:PORT)", o.turnAddr)}
	}
	if o.turnTLSAddr != "" && o.tlsCert == "" {
		return usageError{errors.New("--turn-tls needs --tls-cert and --tls-key")}
	}
	if o.turnHost != "" && o.turnTLSAddr == "" {
		return usageError{errors.New("--turn-host names the turns: address: it needs --turn-tls")}
	}
	if strings.ContainsAny(o.turnHost, ":/?@ ") {
		return usageError{fmt.Errorf("--turn-host %q: want a host name (or IPv4 address), no port or scheme", o.turnHost)}
	}
	if o.turnPorts != "" {
		if _, _, err := parsePortRange(o.turnPorts); err != nil {
			return usageError{err}
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
