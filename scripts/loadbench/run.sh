#!/usr/bin/env bash
# Issue 20's load benchmark in one command: builds infill-server, fakeollama
# and loadbench from this checkout and runs the workload (16 typing sessions
# and an evaluation stream; with admission, then with --backend-slots 0)
# against each backend. Each backend's section lands in OUT/BACKEND.md and
# OUT/BACKEND.json, naming the commit measured.
#
#   scripts/loadbench/run.sh [--backend fake|ollama|both] [--out DIR] [-- loadbench flags]
#
#   fake    fakeollama with 4 generations at once (-slots 4), the ghz suite's
#           paced timing (20 ms + 16 × 5 ms), a prompt delay that outlives a
#           disconnect (as Ollama's prompt evaluation does)
#   ollama  the real local Ollama with the tiny model, OLLAMA_NUM_PARALLEL=1
#           (-slots 1), started privately by loadbench (inference/ollamatest)
#
# Defaults: --backend both, --out scripts/loadbench/results. About 3 minutes
# per backend. Run it on a machine as quiet as you can get: every figure is
# a latency on the same cores as the server, the backend and the clients.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

backends="fake ollama"
out="$root/scripts/loadbench/results"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend)
      case "${2:-}" in
        fake | ollama) backends="$2" ;;
        both) backends="fake ollama" ;;
        *) echo "run.sh: --backend fake|ollama|both" >&2; exit 2 ;;
      esac
      shift ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

commit="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- . ':(exclude,glob)scripts/**/results/**' || commit="$commit (with uncommitted changes)"
work="$(mktemp -d "${TMPDIR:-/tmp}/infill-loadbench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "loadbench: building at $commit" >&2
go build -o "$work/" ./server/cmd/infill-server ./scripts/ghz/fakeollama ./scripts/loadbench

for b in $backends; do
  flags=(-slots 1)
  if [[ "$b" == fake ]]; then
    flags=(-slots 4 -fake-prompt-delay 20ms -fake-token-delay 5ms -fake-tokens 16 -fake-bin "$work/fakeollama")
  fi
  echo "loadbench: $b backend; $(uptime)" >&2
  "$work/loadbench" -backend "$b" -server-bin "$work/infill-server" -out "$out" -commit "$commit" \
    -note "uptime at start: $(uptime | sed 's/^ *//')" "${flags[@]}" "$@" >/dev/null
  echo "loadbench: wrote $out/$b.md; $(uptime)" >&2
done
