// Package turnserver is Concord's embedded TURN and STUN server (RFC 8656,
// RFC 5389), built on github.com/pion/turn/v5, for players whose NATs or
// firewalls keep them from reaching the host directly.
//
// # What it owns
//
// One Server listens for TURN on UDP and TCP on the same port, and on TLS on a
// second port when it is given a certificate; every listener also answers
// STUN binding requests. Relay sockets are UDP, bound in a port range
// (Config.MinPort..MaxPort); TCP relaying (RFC 6062) is refused.
//
// Credentials follow the TURN REST API convention that coturn implements as
// use-auth-secret: the username is "expiry:identity" (expiry in Unix seconds)
// and the password is base64(HMAC-SHA1(key, username)). Server.Credentials
// issues them for one Member (user, device and room: identity
// "user/device/room"); signaling hands them out in the joined message and
// renews them (ice-servers) while the member stays. The key is derived from the
// deployment's secret, or random per process on an open server, so credentials
// never outlive the process that issued them. Malformed and forged credentials
// are refused and counted (Stats.RefusedCredentials); expired ones may not
// start an allocation, but an allocation made in time is refreshed with them
// (coturn authenticates a session once). With Config.Live, the credentials of
// a member no longer in its room are refused on every request, and Revoke
// ends its allocations at once (serve calls it when a member leaves for good).
//
// # Not an open proxy
//
// A TURN server relays to whatever address a client names, so Server
// refuses: loopback, link-local, multicast, unspecified and broadcast peer
// addresses; private and shared ranges (RFC 1918, RFC 6598, ULA) unless
// Config.AllowPeers admits them; and the server's own addresses outside its
// relay port range (so a client cannot reach services on the TURN host, yet
// two members of one server relay to each other, relay to relay). Permission
// and ChannelBind requests for refused addresses get 403; datagrams to a
// refused address and port are dropped at the relay socket (TURN permissions
// name an IP only, so the port rule is enforced per datagram).
//
// # Bounds
//
// Live allocations are capped per identity (Config.MaxAllocations), per token
// (a user in a room, every device: Config.MaxAllocationsPerToken) and per
// client IP address (Config.MaxAllocationsPerAddr: on an open server names are
// free, addresses are not); 486 beyond. An allocation lives at most
// Config.MaxAllocationLifetime however often it is refreshed, and an
// identity's relayed traffic, both directions together, is capped at
// Config.MaxBytesPerSecond (datagrams over it are dropped and counted). TCP and
// TLS connections are capped per client address (Config.MaxConnsPerAddr,
// closed at once beyond) and closed after Config.TCPIdleTimeout without a
// complete message while they hold no allocation.
//
// pion answers two requests with the wrong code, so guard.go answers them
// first, signed with the requester's key: a TCP relay request (RFC 6062, not
// offered) gets 442, not 508, and a ChannelBind to a refused peer 403, not 401.
// It also drops unsigned requests no TURN client sends, which pion would
// challenge with an answer 3.4 times their size.
//
// # Goroutines
//
// Config.Net runs the server on a pion virtual network instead of the OS's
// (UDP only: vnet has no TCP), so tests can put clients behind simulated NATs.
//
// pion's server owns one read goroutine per listener, one per TCP or TLS
// connection and one per allocation; this package adds none. Close stops them all and is idempotent. Stats and
// Credentials may be called from any goroutine.
package turnserver
