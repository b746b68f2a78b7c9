#!/usr/bin/env bash
# Builds the real Ollama server (CPU only, cgo) from the github.com/ollama/ollama
# module version that infill's go.mod pins, and caches the binary.
#
# Usage: scripts/ollama/build.sh [--force]
#   Prints the path of the binary on stdout (everything else goes to stderr).
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
# that infill never uses). Network is needed only for the first build (Go
# module proxy); later runs reuse the cached binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

force=0
if [[ "${1:-}" == "--force" ]]; then force=1; fi

log() { printf 'ollama/build.sh: %s\n' "$*" >&2; }

version="${OLLAMA_VERSION:-}"
if [[ -z "$version" ]]; then
  if ! version="$(cd "$root" && go list -m -f '{{.Version}}' github.com/ollama/ollama 2>/dev/null)" || [[ -z "$version" ]]; then
    log "cannot read the github.com/ollama/ollama version from $root/go.mod (set OLLAMA_VERSION=vX.Y.Z)"
    exit 1
  fi
fi
[[ "$version" == v* ]] || version="v$version"
plain="${version#v}"

state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"
bin="$(realpath -m "${INFILL_OLLAMA_BIN:-$state/ollama/$plain/ollama}")"

if [[ -x "$bin" && $force -eq 0 ]]; then
  printf '%s\n' "$bin"
  exit 0
fi

for h in /usr/include/nlohmann/json.hpp /usr/include/stb/stb_image.h; do
  if [[ ! -f "$h" ]]; then
    log "missing $h: apt-get install nlohmann-json3-dev libstb-dev"
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

log "building github.com/ollama/ollama@$version (cgo, CPU only); takes several minutes on 2 cores"
start=$SECONDS
# go install pkg@version builds with the module's own go.mod and go.sum, exactly
# the dependency set upstream tested, independent of infill's module graph.
(
  cd "$tmp"
  export CGO_ENABLED=1
  export GOBIN="$tmp/bin"
  # Not the caller's GOFLAGS (e.g. -mod=...) or workspace: upstream's module
  # graph alone decides the build.
  export GOFLAGS=-buildvcs=false GOWORK=off
  export CGO_CPPFLAGS="${CGO_CPPFLAGS:-} -I$here/include"
  export CGO_CFLAGS="${CGO_CFLAGS:--O2}"
  export CGO_CXXFLAGS="${CGO_CXXFLAGS:--O2}"
  go install -trimpath \
    -ldflags "-s -w -X github.com/ollama/ollama/version.Version=$plain -X github.com/ollama/ollama/server.mode=release" \
    "github.com/ollama/ollama@$version"
)
mv -f "$tmp/bin/ollama" "$bin"
log "built $bin in $((SECONDS - start))s"
printf '%s\n' "$bin"
