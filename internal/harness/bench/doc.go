// Package bench measures Concord over real pion connections on loopback; `concord bench` and
// `concord bench-host` are its command line.
//
//   - Fanout: a host moves M entities at 20 Hz and N passive bots receive them, all in one
//     process; then the same datagrams go through raw link.Conn pairs (no session logic) as the
//     baseline, so that the CPU and latency ratios are measured in one run on one machine.
//   - Migration: P bots in this process follow a host that runs as a separate process
//     (RunHost, started through MigrationOptions.HostCommand); the host is killed with SIGKILL,
//     and the pause until every replica has converged and updates flow again is measured over
//     many trials.
//
// Every peer runs App, the bench game: the host spawns movers and stamps each tick's values with
// the wall-clock time; members record latency and what they saw in a Probe. Traffic is counted at
// the links (countingTransport), not from peer.Status, so the driver reads exact bytes at any
// instant.
//
// Goroutines: each run owns the peers it starts (peerGroup), a status sampler, raw-baseline
// relays and sender, and one waiter per host process; every one is stopped and waited for before
// the run returns. Results are printed to a caller's io.Writer; nothing here exits.
//
// Results and the commands that produced them are in BENCHMARKS.md.
package bench
