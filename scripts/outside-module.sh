#!/usr/bin/env bash
# The outside-module check: Concord as a game developer imports it. A throwaway module
# example.com/mygame in a temp dir outside this checkout, whose go.mod replaces only
# github.com/concordrtc/concord (=> this checkout, which is not published) and never a pion module,
# so it builds against stock pion/sctp and pion/dtls (Go ignores Concord's own replace lines). It
# holds the orbs game, its host and its bot — docs/guide.md's programs (examples/orbs,
# examples/orbs/host, examples/orbs-bot), copied with only their import path changed — and runs
# them against a `concord serve` built from the checkout on 127.0.0.1, until the host's and the
# bot's replicas agree (/api/rooms: both synced in the room's term with one replica hash, twice in
# a row) and the bot's replica shows the orbs it took. Then the same with examples/embed, a
# program that embeds the server (package server) with the orbs game as its room's dedicated
# host, in place of serve and the host process. It needs the module proxy (go mod tidy).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export GOWORK=off
fail() {
  echo "outside-module: $*" >&2
  for f in serve host bot embed embed-bot; do
    [ -f "$tmp/$f.log" ] && { echo "--- $f.log (last 20 lines)" >&2; tail -n 20 "$tmp/$f.log" >&2; }
  done
  exit 1
}

mod="$tmp/mygame"
mkdir -p "$mod/orbs" "$mod/host" "$mod/bot" "$mod/embed" "$mod/converged" "$tmp/bin"
cp "$root/examples/orbs/orbs.go" "$mod/orbs/"
cp "$root/examples/orbs/host/main.go" "$mod/host/"
cp "$root/examples/orbs-bot/main.go" "$mod/bot/"
cp "$root/examples/embed/main.go" "$mod/embed/"
sed -i 's#"github.com/concordrtc/concord/examples/orbs"#"example.com/mygame/orbs"#' "$mod/host/main.go" "$mod/bot/main.go" "$mod/embed/main.go"
# The waiting, also through Concord's public API (signaling.RoomInfo is GET /api/rooms).
cat >"$mod/converged/main.go" <<'EOF'
// Command converged waits until a room has the given number of members, all synced and reporting
// the room's term and one replica hash, in two polls in a row.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/concordrtc/concord/signaling"
)

func main() {
	url := flag.String("url", "", "concord serve's URL")
	room := flag.String("room", "orbs", "room")
	members := flag.Int("members", 2, "members")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	flag.Parse()
	c := http.Client{Timeout: 5 * time.Second}
	prev, last := "", "no answer yet"
	for deadline := time.Now().Add(*timeout); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := c.Get(*url + "/api/rooms")
		if err != nil {
			last = err.Error()
			continue
		}
		var rooms []signaling.RoomInfo
		err = json.NewDecoder(resp.Body).Decode(&rooms)
		_ = resp.Body.Close()
		if err != nil {
			last = err.Error()
			continue
		}
		key, state := check(rooms, signaling.RoomID(*room), *members)
		last = state
		if key != "" && key == prev {
			fmt.Println("converged:", state)
			return
		}
		prev = key
	}
	fmt.Fprintf(os.Stderr, "not converged within %v: %s\n", *timeout, last)
	os.Exit(1)
}

// check returns term/hash when room has n members, all synced in its term with one hash, and a
// description of the room.
func check(rooms []signaling.RoomInfo, room signaling.RoomID, n int) (string, string) {
	for _, r := range rooms {
		if r.Room != room {
			continue
		}
		var desc []string
		hashes := map[string]bool{}
		ok := len(r.Members) == n
		for _, m := range r.Members {
			hash := "no report"
			if m.Replica != nil {
				hash = fmt.Sprintf("%016x", m.Replica.Hash)
				ok = ok && m.Synced && m.Replica.Term == r.Term
			} else {
				ok = false
			}
			hashes[hash] = true
			desc = append(desc, fmt.Sprintf("#%d %s %s synced=%v hash=%s", m.PeerIndex, m.PeerID, m.Kind, m.Synced, hash))
		}
		state := fmt.Sprintf("room %s term %d host #%d: %s", r.Room, r.Term, r.Host, strings.Join(desc, "; "))
		if !ok || len(hashes) != 1 {
			return "", state
		}
		for h := range hashes {
			return fmt.Sprintf("%d/%s", r.Term, h), state
		}
	}
	return "", fmt.Sprintf("no room %s", room)
}
EOF

echo "outside-module: a module example.com/mygame in $tmp, replacing only github.com/concordrtc/concord"
(
  cd "$mod"
  go mod init example.com/mygame >/dev/null 2>&1
  go mod edit -require=github.com/concordrtc/concord@v0.0.0 -replace=github.com/concordrtc/concord="$root"
  GOFLAGS=-mod=mod go mod tidy
  if [ "$(grep -c '^replace' go.mod)" != 1 ] || grep -q '^replace.*pion' go.mod; then
    echo "outside-module: go.mod must replace only Concord:" >&2; cat go.mod >&2; exit 1
  fi
  # Stock pion: the versions Concord's go.mod requires, from the module cache, not third_party/.
  for m in github.com/pion/sctp github.com/pion/dtls/v3; do
    got=$(go list -m -f '{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}}{{end}}' "$m")
    want="$m $(cd "$root" && go list -m -f '{{.Version}}' "$m")"
    [ "$got" = "$want" ] || { echo "outside-module: $got, want stock $want" >&2; exit 1; }
    echo "outside-module: $got (stock)"
  done
  go vet ./...
  go build -o "$tmp/bin/" ./host ./bot ./embed ./converged
) || fail "the module does not build against stock pion"
(cd "$root" && go build -o "$tmp/bin/concord" ./cmd/concord)

# loggedURL LOG PID WHAT: the http://127.0.0.1:PORT a server started as PID writes to LOG.
loggedURL() {
  local u=""
  for _ in $(seq 1 150); do
    u=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$1" | head -n 1 || true)
    [ -n "$u" ] && break
    kill -0 "$2" 2>/dev/null || fail "$3 exited"
    sleep 0.2
  done
  [ -n "$u" ] || fail "$3 did not log its URL within 30 s"
  echo "$u"
}

# play URL LOG WHAT: a bot joins room orbs at URL until it and the room's host converge; it
# leaves (SIGINT) and says how many orbs its replica credits it with: the host's rule.
play() {
  "$tmp/bin/bot" --server "$1" --room orbs --user bot --for 120s --stop-after 2 >"$2" 2>&1 &
  local bot=$!
  pids+=("$bot")
  "$tmp/bin/converged" --url "$1" --room orbs --members 2 --timeout 60s || fail "$3 and the bot did not converge"
  kill -INT "$bot"
  wait "$bot" || fail "the bot of $3 exited with an error"
  took=$(grep -o 'bot took [0-9]* orbs' "$2" | grep -o '[0-9]*' || true)
  [ -n "$took" ] && [ "$took" -ge 2 ] || fail "the bot of $3 took ${took:-no} orbs, want 2 (--stop-after 2)"
}

# serve on a free port of 127.0.0.1; it logs its URL.
"$tmp/bin/concord" serve --addr 127.0.0.1:0 --static "$root/examples/orbs/web" --room orbs \
  --dedicated-host=false --data "" --metrics=false >"$tmp/serve.log" 2>&1 &
pids+=($!)
url=$(loggedURL "$tmp/serve.log" "${pids[0]}" "concord serve")
echo "outside-module: concord serve at $url (room orbs, no dedicated host)"
"$tmp/bin/host" --server "$url" --room orbs >"$tmp/host.log" 2>&1 &
pids+=($!)
play "$url" "$tmp/bot.log" "the host"
echo "outside-module: the host and the bot built against stock pion converged; the bot took $took orbs"

# examples/embed: the server and the orbs host in one program of the module; the bot joins it.
"$tmp/bin/embed" --addr 127.0.0.1:0 --web "$root/examples/orbs/web" --room orbs >"$tmp/embed.log" 2>&1 &
embed=$!
pids+=("$embed")
url=$(loggedURL "$tmp/embed.log" "$embed" "the embed example")
echo "outside-module: examples/embed at $url (room orbs, its dedicated host in the same process)"
play "$url" "$tmp/embed-bot.log" "the embed example's host"
# The embedding program shuts the server down on SIGINT and exits 0.
kill -INT "$embed"
wait "$embed" || fail "the embed example did not exit cleanly on SIGINT"
echo "outside-module: ok — the bot built against stock pion converged with the host under concord serve and with examples/embed (took $took orbs)"
