package link

import (
	"net"
	"strings"

	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v4"
)

// Candidate types of a selected pair, as ICE names them (RFC 8445 §5.1.1 and
// the browser's RTCIceCandidateType).
const (
	CandidateHost  = "host"
	CandidateSrflx = "srflx"
	CandidatePrflx = "prflx"
	CandidateRelay = "relay"
)

// SelectedPair returns the candidate types (host, srflx, prflx, relay) of the
// local and remote ends of the pair ICE selected, and false while none is
// selected yet. Any goroutine may call it.
func (c *Conn) SelectedPair() (local, remote string, ok bool) {
	p := c.pair.Load()
	if p == nil {
		return "", "", false
	}
	return p[0], p[1], true
}

// allowedServers returns the ICE servers a Conn of a may use. A loopback-only
// API keeps only servers whose host is a loopback IP literal or "localhost":
// it must not send a packet off the machine, so a STUN or TURN server
// elsewhere is dropped (and logged) rather than contacted. Unparsable URLs are
// dropped too; pion would refuse the whole configuration for one of them.
func (a *API) allowedServers(servers []webrtc.ICEServer) []webrtc.ICEServer {
	if len(servers) == 0 {
		return nil
	}
	out := make([]webrtc.ICEServer, 0, len(servers))
	for _, s := range servers {
		urls := make([]string, 0, len(s.URLs))
		for _, raw := range s.URLs {
			u, err := stun.ParseURI(raw)
			if err != nil {
				a.log.Warn().Err(err).Str("url", raw).Msg("dropping an unparsable ICE server URL")
				continue
			}
			if a.loopbackOnly && !isLoopbackHost(u.Host) {
				a.log.Debug().Str("url", raw).Msg("loopback-only links: dropping an ICE server that is not on loopback")
				continue
			}
			if a.local != nil && !isLoopbackHost(u.Host) && !a.isLocal(net.ParseIP(strings.Trim(u.Host, "[]"))) {
				a.log.Debug().Str("url", raw).Msg("links on this machine only: dropping an ICE server elsewhere")
				continue
			}
			urls = append(urls, raw)
		}
		if len(urls) > 0 {
			s.URLs = urls
			out = append(out, s)
		}
	}
	return out
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
