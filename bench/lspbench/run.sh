#!/usr/bin/env bash
# What `infill lsp` adds to a keystroke's completion, against fakeollama
# (paced: 20 ms + 16 × 5 ms on a fixed schedule; instant: 16 tokens at
# once): builds infill, infill-server, fakeollama and lspbench, runs it
# on the .go files of $GOROOT/src/net/http, and writes
# bench/lspbench/results/REPORT.md (naming the commit measured) and
# summary.json. Raw logs stay in $INFILL_STATE_DIR/lspbench/run-*.
#
# Usage: bench/lspbench/run.sh [--quick] [lspbench flags...]
#   --quick   60 rounds per phase instead of 300, report in the run directory
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"
run="$state/lspbench/run-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$run/bin"

rounds=300
out="$root/bench/lspbench/results"
if [[ "${1:-}" == "--quick" ]]; then
  shift
  rounds=60
  out="$run"
fi

echo "lspbench: building into $run/bin" >&2
(cd "$root" && go build -o "$run/bin/" ./clients/cmd/infill ./server/cmd/infill-server ./bench/fakeollama ./bench/lspbench)

dirty="$(cd "$root" && git status --porcelain --untracked-files=no -- . ':!bench/lspbench/results' 2>/dev/null | awk '{print $2}' | paste -sd' ')"
commit="$(cd "$root" && git rev-parse --short HEAD)${dirty:+ (built with uncommitted changes in: $dirty)}"

"$run/bin/lspbench" -infill "$run/bin/infill" -server "$run/bin/infill-server" -fake "$run/bin/fakeollama" \
  -src "$(go env GOROOT)/src/net/http" -rounds "$rounds" -out "$out" -logs "$run" \
  -report "$out/REPORT.md" -commit "$commit" "$@"
echo "lspbench: report in $out/REPORT.md, logs in $run" >&2
