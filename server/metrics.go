package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// hostCollector serves, at scrape time, what serve sees beyond signaling's own counters: the
// members of every room by kind and by the candidate types of their link to the host (from
// their reports), each room's term, the dedicated host's links (bytes, datagrams, drops per
// channel; links by candidate pair), and the embedded TURN server's figures. It reads
// snapshots (Server.Rooms, peer.Status, turnserver.Stats) and holds no state, so it is
// unchecked (Describe sends nothing).
type hostCollector struct{ s *Server }

func (c *hostCollector) Describe(chan<- *prometheus.Desc) {}

var (
	descMembers      = prometheus.NewDesc("concord_members", "Members of all rooms by kind.", []string{"kind"}, nil)
	descMembersLink  = prometheus.NewDesc("concord_members_by_candidate", "Members by the candidate types of the selected pair of their link to the host, as they report it.", []string{"local", "remote"}, nil)
	descRoomTerm     = prometheus.NewDesc("concord_room_term", "Current host term of each room.", []string{"room"}, nil)
	descHostIsHost   = prometheus.NewDesc("concord_host_is_host", "1 while the dedicated host is the host of its room.", nil, nil)
	descHostTerm     = prometheus.NewDesc("concord_host_term", "The host term the dedicated host follows.", nil, nil)
	descHostLinks    = prometheus.NewDesc("concord_host_links", "The dedicated host's links by the candidate types of their selected pair.", []string{"local", "remote"}, nil)
	descHostEntities = prometheus.NewDesc("concord_host_entities", "Live entities in the dedicated host's replica.", nil, nil)
	descHostBytes    = prometheus.NewDesc("concord_host_link_bytes_total", "Bytes over the dedicated host's links, per channel and direction.", []string{"channel", "direction"}, nil)
	descHostMsgs     = prometheus.NewDesc("concord_host_link_messages_total", "Messages (datagrams on the unreliable channel) over the dedicated host's links, per channel and direction.", []string{"channel", "direction"}, nil)
	descHostDropped  = prometheus.NewDesc("concord_host_link_dropped_total", "Messages the dedicated host's links dropped on the way out (full send buffer), per channel.", []string{"channel"}, nil)
	descHostBackp    = prometheus.NewDesc("concord_host_link_backpressured_total", "Reliable sends the dedicated host's links refused for backpressure.", []string{"channel"}, nil)
	descHostBuffered = prometheus.NewDesc("concord_host_link_buffered_bytes", "Bytes buffered (sent, not yet acknowledged) on the dedicated host's current links, per channel.", []string{"channel"}, nil)
	descLinkStuck    = prometheus.NewDesc("concord_link_close_stuck_total", "Links of this process whose pion close outlived its bound: forced (its DTLS and ICE transports closed under it), abandoned (still stuck after that; its goroutines left behind).", []string{"outcome"}, nil)

	descTURNAllocs      = prometheus.NewDesc("concord_turn_allocations", "Live TURN allocations.", nil, nil)
	descTURNAllocsTotal = prometheus.NewDesc("concord_turn_allocations_total", "TURN allocations made.", nil, nil)
	descTURNBytes       = prometheus.NewDesc("concord_turn_relayed_bytes_total", "Bytes relayed by TURN: out to peers, in from peers.", []string{"direction"}, nil)
	descTURNCreds       = prometheus.NewDesc("concord_turn_refused_credentials_total", "TURN requests refused for their credentials: invalid (malformed or forged), expired (an Allocate past the credentials' TTL), not_member (the member left its room).", []string{"reason"}, nil)
	descTURNPeers       = prometheus.NewDesc("concord_turn_refused_peers_total", "TURN permissions and datagrams refused for their peer address.", nil, nil)
	descTURNQuota       = prometheus.NewDesc("concord_turn_refused_allocations_total", "TURN allocations refused: per_identity, per_token, per_addr (caps), tcp_relay (442).", []string{"reason"}, nil)
	descTURNRevoked     = prometheus.NewDesc("concord_turn_revoked_allocations_total", "TURN allocations ended because their member left its room for good.", []string{"reason"}, nil)
	descTURNConns       = prometheus.NewDesc("concord_turn_connections", "Open TURN TCP/TLS connections.", nil, nil)
	descTURNConnsClosed = prometheus.NewDesc("concord_turn_closed_connections_total", "TURN TCP/TLS connections the server closed: per_addr (over --turn-max-conns-per-addr, at once), idle (--turn-tcp-idle-timeout).", []string{"reason"}, nil)
	descTURNDropped     = prometheus.NewDesc("concord_turn_dropped_requests_total", "TURN requests dropped unanswered: unsigned (no MESSAGE-INTEGRITY where no TURN client omits it).", []string{"reason"}, nil)
	descTURNOpen        = prometheus.NewDesc("concord_turn_open", "1 when the embedded TURN relay runs without CONCORD_SECRET: anyone who joins gets credentials.", nil, nil)
	descTURNRate        = prometheus.NewDesc("concord_turn_rate_dropped_total", "Datagrams the TURN relay dropped over an identity's byte rate.", nil, nil)
)

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if rooms, err := c.s.sig.Rooms(ctx); err == nil {
		kinds := map[string]int{}
		pairs := map[[2]string]int{}
		for _, r := range rooms {
			gauge(descRoomTerm, float64(r.Term), string(r.Room))
			for _, m := range r.Members {
				kinds[string(m.Kind)]++
				if m.Link != nil {
					pairs[[2]string{m.Link.Local, m.Link.Remote}]++
				}
			}
		}
		for k, n := range kinds {
			gauge(descMembers, float64(n), k)
		}
		for p, n := range pairs {
			gauge(descMembersLink, float64(n), p[0], p[1])
		}
	}
	if h := c.s.host; h != nil {
		st := h.Status()
		isHost := 0.0
		if st.IsHost {
			isHost = 1
		}
		gauge(descHostIsHost, isHost)
		gauge(descHostTerm, float64(st.Term))
		gauge(descHostEntities, float64(st.Entities))
		for p, n := range st.Pairs {
			gauge(descHostLinks, float64(n), p.Local, p.Remote)
		}
		for i, cs := range st.Channels {
			name := link.Channel(i).String()
			counter(descHostBytes, cs.BytesSent, name, "out")
			counter(descHostBytes, cs.BytesReceived, name, "in")
			counter(descHostMsgs, cs.MessagesSent, name, "out")
			counter(descHostMsgs, cs.MessagesReceived, name, "in")
			counter(descHostDropped, cs.Dropped+cs.Lost, name)
			counter(descHostBackp, cs.Backpressured, name)
			gauge(descHostBuffered, float64(cs.Buffered), name)
		}
	}
	stuck := link.CloseStuck()
	counter(descLinkStuck, stuck.Forced, "forced")
	counter(descLinkStuck, stuck.Abandoned, "abandoned")
	if t := c.s.turn; t != nil {
		st := t.Stats()
		gauge(descTURNAllocs, float64(st.Allocations))
		counter(descTURNAllocsTotal, st.AllocationsTotal)
		counter(descTURNBytes, st.RelayedBytesOut, "out")
		counter(descTURNBytes, st.RelayedBytesIn, "in")
		counter(descTURNCreds, st.RefusedCredentials-st.RefusedExpired-st.RefusedNotMember, "invalid")
		counter(descTURNCreds, st.RefusedExpired, "expired")
		counter(descTURNCreds, st.RefusedNotMember, "not_member")
		counter(descTURNPeers, st.RefusedPeers)
		counter(descTURNQuota, st.RefusedPerIdentity, "per_identity")
		counter(descTURNQuota, st.RefusedPerToken, "per_token")
		counter(descTURNQuota, st.RefusedPerAddr, "per_addr")
		counter(descTURNQuota, st.RefusedTCPRelay, "tcp_relay")
		counter(descTURNRevoked, st.Revoked, "member_left")
		gauge(descTURNConns, float64(st.Conns))
		counter(descTURNConnsClosed, st.RefusedConns, "per_addr")
		counter(descTURNConnsClosed, st.IdleClosed, "idle")
		counter(descTURNDropped, st.DroppedUnsigned, "unsigned")
		open := 0.0
		if c.s.turnOpen {
			open = 1
		}
		gauge(descTURNOpen, open)
		counter(descTURNRate, st.RateDropped)
	}
}

// refusalCollector serves, at scrape time, what the peers of this process refused by the limits
// of docs/protocol.md §5 ("Limits"), per room and reason, and the members they dropped for
// repeated refusals; it reads peer.Status and holds no state. peers lists the peers (nil
// entries skipped); it is called on every scrape.
type refusalCollector struct {
	peers                     func() []roomPeer
	refused, offenders, world *prometheus.Desc
	shed, resent, dropped     *prometheus.Desc
}

// roomPeer is a peer of this process and its room.
type roomPeer struct {
	room string
	p    *peer.Peer
}

func newRefusalCollector(peers func() []roomPeer) *refusalCollector {
	return &refusalCollector{
		peers: peers,
		refused: prometheus.NewDesc("concord_peer_refused_total",
			"Inputs a peer of this process refused by the protocol's limits, per room and reason.", []string{"room", "reason"}, nil),
		offenders: prometheus.NewDesc("concord_peer_offenders_total",
			"Members whose link a host of this process closed for repeated refused inputs, per room.", []string{"room"}, nil),
		shed: prometheus.NewDesc("concord_peer_signals_shed_total",
			"Signals of a peer of this process that signaling did not relay (recipient_busy), per room.", []string{"room"}, nil),
		resent: prometheus.NewDesc("concord_peer_signals_resent_total",
			"Times a link of a peer of this process sent its refused signals again, per room.", []string{"room"}, nil),
		dropped: prometheus.NewDesc("concord_peer_signals_dropped_total",
			"Signals to a peer of this process its signaling client dropped on arrival (its event queue three quarters full), per room.", []string{"room"}, nil),
		world: prometheus.NewDesc("concord_room_world_bytes",
			"Size of each room's world in a peer of this process, as a checkpoint (bounded by --max-world-bytes for members' writes).", []string{"room"}, nil),
	}
}

func (c *refusalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.refused
	ch <- c.offenders
	ch <- c.world
	ch <- c.shed
	ch <- c.resent
	ch <- c.dropped
}

func (c *refusalCollector) Collect(ch chan<- prometheus.Metric) {
	for _, rp := range c.peers() {
		if rp.p == nil {
			continue
		}
		st := rp.p.Status()
		for r, n := range st.RefusedBy {
			ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(n), rp.room, peer.Refusal(r).String())
		}
		ch <- prometheus.MustNewConstMetric(c.offenders, prometheus.CounterValue, float64(st.Offenders), rp.room)
		ch <- prometheus.MustNewConstMetric(c.world, prometheus.GaugeValue, float64(st.WorldBytes), rp.room)
		ch <- prometheus.MustNewConstMetric(c.shed, prometheus.CounterValue, float64(st.SignalsShed), rp.room)
		ch <- prometheus.MustNewConstMetric(c.resent, prometheus.CounterValue, float64(st.SignalsResent), rp.room)
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.SignalsDropped), rp.room)
	}
}
