// Package link is the transport under package peer: a message link to one
// remote participant with two channels, over a pion WebRTC PeerConnection
// (Conn) or in memory (Pipe).
//
// # What it owns
//
// Every connection carries two pre-negotiated data channels (negotiated:
// true, fixed ids, so no in-band DCEP handshake and a browser creates the same
// pair with createDataChannel):
//
//   - Reliable, id 0: ordered and reliable.
//   - Unreliable, id 1: unordered, maxRetransmits 0.
//
// pion v4.2.20 does not apply the reliability parameters of negotiated
// channels to the SCTP stream, which silently makes id 1 ordered and
// reliable; pionfix.go corrects it and the tests check the behaviour on a
// lossy, reordering virtual network rather than the flags.
//
// An API holds the pion settings of docs/design.md §6, applied to every Conn it makes:
// loopback-only candidates unless Config.AllowNonLoopback (interface "lo",
// local and remote IPs loopback, and only ICE servers on loopback), loopback
// candidates included, mDNS off, UDP4 only, one shared ICE UDP socket with
// 4 MiB buffers (batched on Linux: sendmmsg, UDP GSO, recvmmsg; udpbatch.go), an optional public IP advertised in host candidates (1:1
// NAT), and detached data channels. Each Conn takes the STUN/TURN servers
// signaling handed out (ConnConfig.ICEServers) and reports the candidate
// types of its selected pair (SelectedPair). Conn setup is a signaling-agnostic offer/answer:
// NewOfferer or NewAnswerer, outbound Signals through ConnConfig.Signal,
// inbound ones through HandleSignal. SDP is never modified. Remote candidates
// are optional (Chromium on loopback sends none; pion learns its address from
// the first connectivity check) and are queued until the remote description
// is set.
//
// Send never blocks and never keeps the payload. SendOwned (OwnedSender; the
// helper SendOwned falls back to Send) takes the payload over instead: the
// caller never writes it again, and a Conn's SCTP stream reads it until its
// chunks are acknowledged or abandoned rather than copying it, so one buffer
// can go to many Conns (a host's shared datagrams). That needs Concord's
// carried pion/sctp (FastPaths; README "Carried pion patches"): with stock
// pion/sctp SendOwned copies, as Send does. Flow control is explicit,
// because pion's unreliable channel queues without bound: an unreliable
// datagram is dropped and counted when the channel buffers more than
// Config.UnreliableDropThreshold bytes; a reliable send fails with
// *BackpressureError (ErrBackpressure) above Config.ReliableHighWater, which
// the peer loop should take as "this member cannot keep up". Received
// messages over MaxReliableMessage or MaxUnreliableMessage end the link with
// ErrTooLarge; nothing larger is ever allocated.
//
// # Goroutines
//
// A Conn owns one run goroutine (sends outbound signals in order, starts the
// readers, tears down) and one read goroutine per channel, each reading into
// one reused buffer sized for the channel's maximum message. pion's callbacks
// (OnOpen, OnICECandidate, OnConnectionStateChange) only post to the run
// goroutine or mark the Conn dead. The Conn dies on Close, on the remote's
// close, when ICE reports disconnected or failed, when a read fails or on a
// protocol error; Done is closed once its goroutines and pion's have
// finished, and Err says why. Close is idempotent and joins everything.
//
// The Handler runs on the read goroutine of its channel (for a Pipe, on the
// delivery goroutine of its direction) with a payload valid only during the
// call. It must not block for long: it should copy what it needs and post it
// to the peer loop. A blocked Handler stalls that channel and, through SCTP
// flow control, the sender's buffer. Neither the Handler nor the Signal
// callback may call Close, which waits for the goroutine they run on.
//
// Send, Stats, Done and Close may be called from any goroutine; HandleSignal
// too, though signals should be fed in the order they arrived.
package link
