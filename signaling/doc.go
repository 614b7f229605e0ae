// Package signaling is Concord's "group call": a websocket server that keeps
// rooms of members, elects each room's host, and relays WebRTC offers,
// answers and ICE candidates between members. The Go client and the wire messages live in
// package sigclient (which a peer imports without the server's dependencies); the names are
// re-exported here.
//
// The server knows nothing about game state. For each room it owns the
// membership, the peer indices (issued in join order from 1 and never reused
// while the server runs, even if the room empties and opens again), the host
// and its term, and the members' latest replica reports. The wire protocol is
// JSON over one websocket per member; docs/protocol.md §4 is its
// specification.
//
// # Election
//
// Elect is the pure election rule (pinned hosts, power level, join order,
// peer id; only synced members, unless none is). The server re-runs it on
// every join, leave and synced report; whenever the result changes, the term
// grows by one and every member gets a "host" message. A member that becomes
// host counts as synced from then on. So a pinned or more powerful member
// that joins a running room first syncs from the current host, reports
// synced, and only then takes over, with a new term.
//
// # ICE servers and links
//
// Config.ICEServers, when set, gives each joining member the STUN/TURN servers its peer
// connections use, with credentials for its identity; they travel in the joined message
// (Joined.ICEServers) in the browser's RTCIceServer shape, and again every Config.ICERefresh
// (ICEServersUpdated), so that short-lived TURN credentials are renewed while the member stays.
// Server.IsMember and Config.MemberLeft let a TURN relay end credentials with the membership
// they were issued for. A member's report may carry the
// candidate types of its link to the host (LinkTypes), shown in /api/rooms, plus its round-trip
// time and migration pauses, which feed the histograms registered with Config.Registerer.
//
// # Resume
//
// A member that lost its connection (a crashed or restarted server, a network blip) joins again
// with a Resume claim: its old peer index, term and host, and the ResumeToken of its last
// Joined (an HMAC of room, index and identity under a key derived from Config.Secret, so a
// restarted server checks it; an open server trusts every claim). The server gives the index
// back unless another identity holds it, raises the room's next index and term, restores a host
// that resumes in its own term without a new term, and holds the election for ResumeGrace while
// members name a host that has not come back. Refusals wrap ErrResumeRefused.
// docs/protocol.md §5 "Session: signaling outage and resume" has the rules.
//
// # Goroutines
//
// One hub goroutine, started by New, owns every room; nothing else touches
// room state. Each websocket has a reader, which reads and sends the hub
// events (it leaves the HTTP handler's goroutine after the upgrade, so that
// net/http lets go of the request's state), and, while the socket has a queued
// message, a due ping or its close to write, a writer, which alone writes data
// messages from a bounded queue: an idle member costs one goroutine and no
// queue. The hub never blocks on a socket: signals
// (and answers to refused messages) are shed before they fill the last quarter
// of a queue, and a member whose queue fills with the rest is disconnected (a
// slow consumer) and counted.
// Server.Close sends every socket a close frame and waits for all of them. Resume grace timers
// (Config.AfterFunc) only post an event to the hub; the hub stops them when it quits.
// Server.mu guards the set of live sockets, the connection counts and the
// closed flag; each conn's strikeMu guards its count of refused messages (the
// reader and the hub both strike). No goroutine holds two locks at once.
//
// A Client runs a reader and a writer goroutine. Its methods may be called
// from any goroutine; they never block beyond their context, and Events never
// blocks the reader (an undrained queue disconnects instead).
//
// # Security
//
// Every input is bounded (docs/protocol.md "Signaling: limits"): connections in
// total and per address, rooms, members, signal budgets per pair and per
// recipient, payload sizes, terms (MaxTerm, MaxTermSkew) and reports. A
// refusal tells the sender why, counts in Stats.Refused, and a member refused
// more than Config.ErrorBurst times is dropped (too_many_errors).
//
// With Config.Secret set, every join needs an HS256 JWT (see Claims and
// IssueToken) that names the room; power level and the right to host come
// only from the token. Without a secret the server is open (for development),
// says so once at Warn level, and gives every member DefaultPowerLevel.
package signaling
