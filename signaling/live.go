package signaling

import "sync"

// liveMembers is the set of every member's room and identity. The hub writes it as members join
// and leave; any goroutine reads it (Server.IsMember), so that a service beside signaling, the
// embedded TURN relay, can check at once that whoever holds its credentials is still a member.
type liveMembers struct {
	mu sync.RWMutex
	m  map[liveKey]PeerIndex
}

type liveKey struct {
	room RoomID
	id   Identity
}

func (l *liveMembers) add(room RoomID, id Identity, index PeerIndex) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[liveKey{room, id}] = index
}

func (l *liveMembers) remove(room RoomID, id Identity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, liveKey{room, id})
}

func (l *liveMembers) index(room RoomID, id Identity) (PeerIndex, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i, ok := l.m[liveKey{room, id}]
	return i, ok
}

// IsMember reports whether id is a member of room on this server now: from its join until it
// leaves for any reason (Config.MemberLeft is told then). Any goroutine may call it; it does
// not wait for the hub.
func (s *Server) IsMember(room RoomID, id Identity) bool {
	_, ok := s.live.index(room, id)
	return ok
}

// MemberIndex returns the peer index of member id of room on this server now, and false when id
// is not a member. The voice forwarder uses it to find a member's avatar in the room's world
// (docs/protocol.md §10). Any goroutine may call it; it does not wait for the hub.
func (s *Server) MemberIndex(room RoomID, id Identity) (PeerIndex, bool) {
	return s.live.index(room, id)
}

// evICERefresh: time to hand every member fresh ICE servers (Config.ICERefresh).
type evICERefresh struct{}

// iceServersMsg hands a member fresh ICE servers (its TURN credentials renewed).
type iceServersMsg struct {
	V          int         `json:"v"`
	Type       msgType     `json:"type"`
	ICEServers []ICEServer `json:"iceServers"`
}

// armICERefresh starts the timer of the next refresh, if the server hands out ICE servers
// and refreshes them.
func (h *hub) armICERefresh() {
	if h.cfg.ICEServers == nil || h.cfg.ICERefresh <= 0 {
		return
	}
	h.refreshStop = h.cfg.AfterFunc(h.cfg.ICERefresh, func() { h.post(&evICERefresh{}) })
}

// refreshICE sends every member fresh ICE servers, then arms the next refresh.
func (h *hub) refreshICE() {
	for _, r := range h.rooms {
		for _, m := range r.members {
			h.send(m, mustMarshal(iceServersMsg{V: ProtocolVersion, Type: typeICEServers, ICEServers: h.iceServers(r.id, m.id)}))
		}
	}
	h.armICERefresh()
}
