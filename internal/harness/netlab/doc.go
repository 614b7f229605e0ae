// Package netlab builds a small simulated internet out of Linux network namespaces, for tests that
// must see real addresses, NATs and relays (docs/design.md §6) without sending a packet anywhere else.
//
// The topology (every address from 100.64.0.0/10 or 10.0.0.0/8):
//
//	                      bridge br0 (namespace <prefix>-sw)
//	   ┌───────────────┬──────────┴─────┬────────────────┬────────────────┐
//	server            public          router A         router B         router C
//	100.64.0.10       100.64.0.20     100.64.0.11      100.64.0.12      100.64.0.13
//	                                  symmetric NAT    symmetric NAT    NAT, drops UDP
//	                                  10.1.0.1         10.2.0.1         10.3.0.1
//	                                  home A 10.1.0.2  home B 10.2.0.2  home C 10.3.0.2
//
// and, on the same bridge, three cluster nodes n1, n2, n3 at 100.64.0.31, .32, .33 (Lab.Nodes,
// NodeAddr): machines for the `concord serve` nodes of a cluster, each with its own data
// directory, whose members connect from Public with the list of the three node URLs.
//
// Routers masquerade with "random,fully-random", so every new destination gets a new random
// source port (a symmetric NAT), and forward only what their homes started. Nothing has a route
// beyond 100.64.0.0/24 and its own home, so no packet can leave the lab; the root namespace and
// the machine's interfaces are never touched (the bridge lives in a namespace too).
//
// Every namespace is named <prefix>-<role>, where the prefix carries the creating process's pid,
// and so is the lab's TempDir: New first deletes what earlier runs whose process is gone left
// behind, and Lab.Close kills whatever still runs inside the lab, then deletes its namespaces and
// TempDir. Main runs a test binary inside the lab's public namespace, so that a test's own
// sockets can only ever reach the lab; NS.Do, NS.Net and NS.Command put a socket, a pion stack
// or a process into another namespace. The harness drives ip(8) and nft(8) and needs root.
package netlab
