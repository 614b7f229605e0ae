#!/usr/bin/env bash
# Concord's whole test suite, runnable on a fresh machine: it installs what it needs, then runs
# go vet, the Go tests with the race detector, and the JavaScript checks (the @dcl/ecs differential
# generator re-checks the committed vectors against the real reference implementation).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v go >/dev/null || { echo "test.sh: Go is required (https://go.dev/dl); none found" >&2; exit 1; }
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "test.sh: please install: ${need_apt[*]}" >&2; exit 1
  fi
fi

echo "== go vet"
go vet ./...

echo "== @dcl/ecs differential vectors (regenerated with the reference and compared to the committed ones)"
(cd crdt/testdata/dcl && npm ci --no-audit --no-fund --loglevel=error && node gen.mjs --check)

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...
