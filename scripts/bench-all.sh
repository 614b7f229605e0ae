#!/usr/bin/env bash
# The headline table of BENCHMARKS.md in one command: builds concord, then runs `concord bench all`
# from the repository's root (the fan-out rows need node; their dependencies are installed with
# npm ci in bench/colyseus and crdt/testdata/dcl when missing, or the rows say why they were
# skipped). Arguments go to `concord bench all`: -quick (under 3 minutes), -skip fanout,crdt, …
# Everything runs on loopback.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="$(mktemp -d)/concord"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/concord
"$bin" bench all "$@"
