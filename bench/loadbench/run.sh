#!/usr/bin/env bash
# Issue 20's load benchmark in one command: builds infill-server, fakeollama
# and loadbench from this checkout and runs the workload (16 typing sessions
# and an evaluation stream; with admission, with admission but --burst-wait 0,
# then with --backend-slots 0)
# against each backend. Each backend's section lands in OUT/BACKEND.md and
# OUT/BACKEND.json, naming the commit measured.
#
#   bench/loadbench/run.sh [--backend fake|fake-wide|ollama|all] [--out DIR] [-- loadbench flags]
#
#   fake    fakeollama with 4 generations at once (-slots 4), the ghz suite's
#           paced timing (20 ms + 16 × 5 ms), a prompt delay that outlives a
#           disconnect (as Ollama's prompt evaluation does): 16 typists ask
#           for about four times what it can run
#   fake-wide  the same with 24 at once (-slots 24): room for every session
#           and the evaluation stream, as a GPU engine batching many
#           sequences (vLLM, SGLang) has; OUT/wide/fake.{md,json}
#   ollama  the real local Ollama with the tiny model, OLLAMA_NUM_PARALLEL=1
#           (-slots 1), started privately by loadbench (inference/ollamatest)
#
# Defaults: --backend all, --out bench/loadbench/results. About 6 minutes
# per backend. Run it on a machine as quiet as you can get: every figure is
# a latency on the same cores as the server, the backend and the clients.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

backends="fake fake-wide ollama"
out="$root/bench/loadbench/results"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend)
      case "${2:-}" in
        fake | fake-wide | ollama) backends="$2" ;;
        all | both) backends="fake fake-wide ollama" ;;
        *) echo "run.sh: --backend fake|fake-wide|ollama|all" >&2; exit 2 ;;
      esac
      shift ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

commit="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- . ':(exclude,glob)bench/**/results/**' || commit="$commit (with uncommitted changes)"
work="$(mktemp -d "${TMPDIR:-/tmp}/infill-loadbench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "loadbench: building at $commit" >&2
go build -o "$work/" ./server/cmd/infill-server ./bench/fakeollama ./bench/loadbench

for b in $backends; do
  kind="$b" dir="$out"
  flags=(-slots 1)
  paced=(-fake-prompt-delay 20ms -fake-token-delay 5ms -fake-tokens 16 -fake-bin "$work/fakeollama")
  case "$b" in
    fake) flags=(-slots 4 "${paced[@]}") ;;
    fake-wide) kind=fake dir="$out/wide" flags=(-slots 24 "${paced[@]}") ;;
  esac
  mkdir -p "$dir"
  echo "loadbench: $b backend; $(uptime)" >&2
  "$work/loadbench" -backend "$kind" -server-bin "$work/infill-server" -out "$dir" -commit "$commit" \
    -note "uptime at start: $(uptime | sed 's/^ *//')" "${flags[@]}" "$@" >/dev/null
  echo "loadbench: wrote $dir/$kind.md; $(uptime)" >&2
done
