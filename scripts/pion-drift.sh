#!/usr/bin/env bash
# The drift check of the carried pion modules (third_party/pion-sctp, third_party/pion-dtls; like
# tailscale's TestSyncedToUpstream): each carried tree must be exactly the upstream version it claims
# — the first line of its CONCORD-PATCH.md, which go.mod's require line must name too — with its
# concord.patch applied, plus Concord's own files listed below (not in the patch). It downloads that
# version (module proxy or cache), applies the patch to a fresh copy and compares it with the carried
# tree byte for byte. The same for its per-item patches (patches/series: applied in that order to
# the upstream version they give the same tree), which are what would be sent upstream.
#
#   scripts/pion-drift.sh          check
#   scripts/pion-drift.sh -write   regenerate each concord.patch from its carried tree: diff -ruN of the
#                                  upstream module (less the upstream paths not carried) and the carried
#                                  tree (less Concord's own files), file timestamps left out. The per-item
#                                  patches are not regenerated: edit them (git diff of the item's commits)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v patch >/dev/null || { echo "pion-drift: needs patch (GNU patch; Debian: apt-get install patch)" >&2; exit 1; }
write=false
[ "${1:-}" = -write ] && write=true
tmp="$(mktemp -d)"
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
status=0

# drift DIR MODULE DROPPED OWN: DROPPED are upstream paths the carried copy leaves out, OWN are
# Concord's own files in it (CONCORD-PATCH.md, the patch files themselves and the patch's tests).
drift() {
  local dir=$1 module=$2 dropped=$3 own=$4 claimed required upstream work p
  claimed=$(sed -n '1s/^# .* \(v[0-9][0-9.]*\)$/\1/p' "$dir/CONCORD-PATCH.md")
  # go.mod's require line, and the version the build selects (what a program without the replace gets)
  required=$(awk -v m="$module" '($1 == m || ($1 == "require" && $2 == m)) { print $NF == "indirect" ? $(NF-2) : $NF; exit }' go.mod)
  selected=$(go list -m -f '{{.Version}}' "$module")
  if [ -z "$claimed" ] || [ "$claimed" != "$required" ] || [ "$claimed" != "$selected" ]; then
    echo "pion-drift: $dir claims $module ${claimed:-no version (first line of CONCORD-PATCH.md)}, go.mod requires ${required:-nothing}, the build selects $selected" >&2
    status=1
    return
  fi
  upstream=$(go mod download -json "$module@$claimed" | sed -n 's/.*"Dir": "\(.*\)",*$/\1/p')
  [ -d "$upstream" ] || { echo "pion-drift: go mod download $module@$claimed gave no directory" >&2; status=1; return; }
  work="$tmp/$(basename "$dir")"
  mkdir -p "$work"
  cp -r "$upstream" "$work/a"
  chmod -R u+w "$work/a"
  for p in $dropped; do rm -rf "${work:?}/a/$p"; done
  cp -r "$work/a" "$work/series"
  cp -r "$dir" "$work/b"
  for p in $own; do rm -rf "${work:?}/b/$p"; done
  if $write; then
    (cd "$work" && diff -ruN a b || [ $? = 1 ]) | sed -E 's/^((---|\+\+\+) [^\t]*)\t.*$/\1/' >"$dir/concord.patch"
    echo "pion-drift: wrote $dir/concord.patch ($module $claimed)"
    return
  fi
  if ! patch -s -E -p1 -d "$work/a" --no-backup-if-mismatch <"$dir/concord.patch" >"$work/patch.log" 2>&1; then
    cat "$work/patch.log" >&2
    echo "pion-drift: $dir/concord.patch does not apply to $module $claimed; regenerate it: scripts/pion-drift.sh -write" >&2
    status=1
    return
  fi
  if ! diff -r "$work/a" "$work/b" >"$work/diff.log"; then
    head -n 40 "$work/diff.log" >&2
    echo "pion-drift: $dir is not $module $claimed + concord.patch (+ its own files: $own); if the change is meant, regenerate the patch: scripts/pion-drift.sh -write" >&2
    status=1
    return
  fi
  echo "pion-drift: $dir = $module $claimed + concord.patch ($(grep -c '^+++ ' "$dir/concord.patch") files)"
  while read -r p; do
    if ! patch -s -E -p1 -d "$work/series" --no-backup-if-mismatch <"$dir/patches/$p" >"$work/patch.log" 2>&1; then
      cat "$work/patch.log" >&2
      echo "pion-drift: $dir/patches/$p does not apply after the ones before it in $dir/patches/series" >&2
      status=1
      return
    fi
  done <"$dir/patches/series"
  if ! diff -r "$work/series" "$work/b" >"$work/diff.log"; then
    head -n 40 "$work/diff.log" >&2
    echo "pion-drift: $dir/patches/series applied to $module $claimed is not $dir: a change is missing from the per-item patches (or is in one twice)" >&2
    status=1
    return
  fi
  echo "pion-drift: $dir = $module $claimed + patches/series ($(wc -l <"$dir/patches/series") patches)"
}

drift third_party/pion-sctp github.com/pion/sctp "examples" \
  "CONCORD-PATCH.md concord.patch patches concord_patch_test.go"
drift third_party/pion-dtls github.com/pion/dtls/v3 "examples e2e" \
  "CONCORD-PATCH.md concord.patch patches concord_patch_test.go pkg/crypto/ciphersuite/concord_patch_test.go"
exit $status
