// Command concord runs Concord: the signaling server with its demo page and dedicated host
// (serve), a dedicated host process (host), headless bot peers (bot), benchmarks (bench) and
// CRDT tools (crdt). It is the only place that prints to the terminal or exits.
package main
