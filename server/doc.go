// Package server is the Concord server, to embed in a Go program: what `concord serve` runs.
//
// A Server serves, on one HTTP(S) listener, the page and the client modules (/concord/js/),
// signaling (/ws), /api/rooms, /healthz and, as Options say, /metrics and /debug/pprof. It runs
// the dedicated hosts of its rooms in the same process — the arena demo's, and the embedding
// program's own games (Options.Apps) — and optionally keeps rooms durable (Options.Data, an
// embedded NATS JetStream), joins a cluster (Options.ClusterName, docs/protocol.md §7) and runs
// a TURN relay (Options.TURN) and the proximity voice forwarder at /voice/ (Options.Voice,
// package voice, docs/protocol.md §10).
//
// # Embedding
//
// Fill Options (the zero value works: a server on 127.0.0.1:7880, rooms in memory), make the
// server with New, Start it, and Shutdown when done:
//
//	s, err := server.New(server.Options{
//		Addr: "127.0.0.1:7880",
//		Apps: map[string]func() peer.App{"counter": func() peer.App { return &Counter{} }},
//	})
//	if err != nil {
//		return err // an *OptionError names the option (by its flag) that is wrong
//	}
//	if err := s.Start(); err != nil {
//		return err
//	}
//	defer s.Shutdown(context.Background())
//	fmt.Println("serving at", s.URL())
//
// Start returns once the server accepts connections; Addr and URL then tell where (with
// Addr "127.0.0.1:0", which port). Failed delivers the error of a part that stopped on its own
// (the listener, a dedicated host); Shutdown stops everything and waits for every goroutine the
// server started, the dedicated hosts' last checkpoints included.
//
// Each room of Options.Apps gets a dedicated host in this process, pinned as the room's host
// (DedicatedHostUser): members that join the room (browsers through the JS client, Go peers
// through package peer) follow it. Host returns a room's host peer, whose Do reads and writes its
// world. examples/embed is a whole program.
//
// Handler returns the server's HTTP handler, to mount in a mux of the program's own as well;
// Registry the Prometheus registry the server registers into (Options.Registry to pass one).
//
// # Options and flags
//
// Every option but the program's own (Logger, Now, Registry, Apps) and the environment's (Secret)
// is a `concord serve` flag of the same meaning, and a key of its config file (`concord serve
// --config`, docs/serve.toml); each field's comment names its flag. A zero
// field keeps a default suited to a program (no /metrics route, no HSTS, rooms in memory);
// the flags' defaults suit a deployment. Nothing is read from the environment: `concord serve`
// takes CONCORD_SECRET into Options.Secret, CONCORD_ADMIN_KEY into Options.Limits.AdminKey and
// CONCORD_LOOPBACK_ONLY into Options.Network.LoopbackOnly.
package server
