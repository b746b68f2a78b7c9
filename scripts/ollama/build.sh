#!/usr/bin/env bash
# Builds the real Ollama server (CPU only, cgo) from the github.com/ollama/ollama
# module version that infill's go.mod pins, and caches the binary.
#
# Usage: scripts/ollama/build.sh [--force|--print-path]
#   Prints the path of the binary on stdout (everything else goes to stderr).
#   --print-path prints where the binary is or would be, builds nothing.
#
# Environment:
#   INFILL_STATE_DIR   state directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/infill)
#   INFILL_OLLAMA_BIN  if set, the binary path to produce instead of the default
#                      $INFILL_STATE_DIR/ollama/<version>/ollama
#   OLLAMA_VERSION     override the module version (default: read from go.mod)
#
# Needs: Go (cgo), gcc/g++, and Debian's nlohmann-json3-dev and libstb-dev
# (the module zip drops llama/llama.cpp/vendor/; their headers replace it, and
# scripts/ollama/include/miniaudio/miniaudio.h is a stub for the audio decoder
# that infill never uses); scripts/setup.sh installs them when missing.
# Network is needed only for the first build (Go module proxy); later runs
# reuse the cached binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

force=0 print_path=0
case "${1:-}" in
  --force) force=1 ;;
  --print-path) print_path=1 ;;
  "") ;;
  *)
    printf 'usage: scripts/ollama/build.sh [--force|--print-path]\n' >&2
    exit 2
    ;;
esac

log() { printf 'ollama/build.sh: %s\n' "$*" >&2; }

version="${OLLAMA_VERSION:-}"
if [[ -z "$version" ]]; then
  # Read go.mod itself, not `go list -m`: that needs the module proxy, and
  # this runs before anything is downloaded (scripts/run.sh asks where the
  # binary is before it installs packages).
  version="$(awk '$1 == "require" && $2 == "github.com/ollama/ollama" { print $3; exit }
    $1 == "github.com/ollama/ollama" { print $2; exit }' "$root/go.mod" 2>/dev/null)" || true
  if [[ -z "$version" ]]; then
    log "cannot read the github.com/ollama/ollama version from $root/go.mod (set OLLAMA_VERSION=vX.Y.Z)"
    exit 1
  fi
fi
[[ "$version" == v* ]] || version="v$version"
plain="${version#v}"

state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"
bin="$(realpath -m "${INFILL_OLLAMA_BIN:-$state/ollama/$plain/ollama}")"

if [[ $print_path -eq 1 ]] || [[ -x "$bin" && $force -eq 0 ]]; then
  printf '%s\n' "$bin"
  exit 0
fi

# Compilers, headers, certificates (a no-op when scripts/run.sh or
# scripts/test.sh already installed them).
"$root/scripts/setup.sh" packages build ollama
for h in /usr/include/nlohmann/json.hpp /usr/include/stb/stb_image.h; do
  if [[ ! -f "$h" ]]; then
    log "missing $h (INFILL_SKIP_PACKAGES=1?): install nlohmann-json3-dev libstb-dev or their equivalents"
    exit 1
  fi
done

mkdir -p "$(dirname "$bin")"
# One build at a time per binary path (backend.sh and tests may race).
exec 9>"$bin.lock"
flock 9
if [[ -x "$bin" && $force -eq 0 ]]; then
  printf '%s\n' "$bin"
  exit 0
fi

tmp="$(mktemp -d "$(dirname "$bin")/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Outside infill's module and workspace, with the caller's GOFLAGS (e.g.
# -mod=...) dropped: upstream's go.mod and go.sum alone decide the build, the
# dependency set upstream tested.
export GOFLAGS=-buildvcs=false GOWORK=off

# Phase 1: the module and every module its go.mod requires, so the build
# below is compile time only and each phase says how long it took.
log "Go modules: downloading github.com/ollama/ollama@$version and its dependencies"
start=$SECONDS
dir="$(cd "$tmp" && go mod download -json "github.com/ollama/ollama@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
[[ -n "$dir" && -f "$dir/go.mod" ]] || {
  log "go mod download github.com/ollama/ollama@$version failed"
  exit 1
}
mkdir -p "$tmp/mods"
cp "$dir/go.mod" "$dir/go.sum" "$tmp/mods/"
chmod u+w "$tmp/mods/go.mod" "$tmp/mods/go.sum"
# No arguments: every module the (go >= 1.17) go.mod lists.
(cd "$tmp/mods" && go mod download) || {
  log "downloading the modules github.com/ollama/ollama@$version requires failed"
  exit 1
}
log "Go modules: done in $((SECONDS - start))s"

# Phase 2: the cgo build, with a line every 30s.
log "Ollama cgo build: github.com/ollama/ollama@$version (CPU only); about 2.5 minutes on 2 idle cores, far longer under load"
start=$SECONDS
# go install pkg@version builds with the module's own go.mod and go.sum.
(
  cd "$tmp"
  export CGO_ENABLED=1
  export GOBIN="$tmp/bin"
  export CGO_CPPFLAGS="${CGO_CPPFLAGS:-} -I$here/include"
  export CGO_CFLAGS="${CGO_CFLAGS:--O2}"
  export CGO_CXXFLAGS="${CGO_CXXFLAGS:--O2}"
  exec go install -trimpath \
    -ldflags "-s -w -X github.com/ollama/ollama/version.Version=$plain -X github.com/ollama/ollama/server.mode=release" \
    "github.com/ollama/ollama@$version"
) &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
next=30
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  if ((SECONDS - start >= next)); then
    log "Ollama cgo build: still compiling, ${next}s"
    next=$((next + 30))
  fi
done
wait "$pid" || {
  log "Ollama cgo build failed after $((SECONDS - start))s"
  exit 1
}
trap 'rm -rf "$tmp"' EXIT
mv -f "$tmp/bin/ollama" "$bin"
log "Ollama cgo build: built $bin in $((SECONDS - start))s"
printf '%s\n' "$bin"
