package sigclient

// Event is what a Client delivers on Events: one of Joined, MemberJoined,
// MemberLeft, MemberSynced, HostChanged, ICEServersUpdated, Signal, Error or Closed.
type Event interface{ event() }

// Joined is always the first event. It carries the room as it was when this
// client joined; later changes arrive as further events.
type Joined struct {
	// Room is the room joined.
	Room RoomID
	// Self is this client's peer index.
	Self PeerIndex
	// PeerID is this client's identity; the server picks the device part when
	// the join named none.
	PeerID Identity
	// Term is the room's current term.
	Term Term
	// Host is the current host, 0 if none.
	Host PeerIndex
	// Members lists every member, this client included, by peer index.
	Members []Member
	// PinnedHosts are the room's pinned hosts, in order, so that a peer can
	// recompute Elect itself.
	PinnedHosts []Identity
	// ResumeToken proves, in a later join's Resume claim, that this member held Self. It is
	// empty on an open server (no secret), which trusts every claim.
	ResumeToken string
	// ICEServers are the STUN/TURN servers, with this member's credentials, that its peer
	// connections should use (Config.ICEServers); nil when the server hands out none.
	ICEServers []ICEServer
}

// MemberJoined announces a new member.
type MemberJoined struct {
	Member Member
}

// MemberLeft announces that a member left the room.
type MemberLeft struct {
	Index  PeerIndex
	PeerID Identity
	Reason LeaveReason
}

// MemberSynced announces that a member reported synced. A member that becomes
// host counts as synced without this event.
type MemberSynced struct {
	Index PeerIndex
	// Term is the term the server recorded the member synced in (Member.SyncedTerm); a member
	// reports synced again after each new host syncs it. 0 from a server that predates it.
	Term Term
}

// HostChanged announces a new host and its term. Host 0 means that no member
// may host. The new host counts as synced from now on (no MemberSynced is
// sent for it).
type HostChanged struct {
	Term Term
	Host PeerIndex
	// ResumeToken replaces the one of Joined (and of earlier HostChanged events): it vouches
	// for Term, so a resume claim should carry the latest. Empty on an open server.
	ResumeToken string
}

// ICEServersUpdated hands this member fresh ICE servers (its TURN credentials renewed before
// they expire, Config.ICERefresh): they replace Joined's for every peer connection made from now
// on. Connections already made keep their allocations.
type ICEServersUpdated struct {
	ICEServers []ICEServer
}

// Signal is an offer, answer or ICE candidate from another member.
type Signal struct {
	From    PeerIndex
	Payload SignalPayload
}

// Closed is always the last event; the channel is closed after it. Err is nil
// after Client.Close, and otherwise wraps ErrDisconnected and the cause (for
// example ErrReplaced, ErrServerClosing or ErrEventOverflow).
type Closed struct {
	Err error
}

func (Joined) event()            {}
func (MemberJoined) event()      {}
func (MemberLeft) event()        {}
func (MemberSynced) event()      {}
func (HostChanged) event()       {}
func (ICEServersUpdated) event() {}
func (Signal) event()            {}
func (Error) event()             {}
func (Closed) event()            {}
