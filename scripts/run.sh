#!/usr/bin/env bash
# The main job: the local backend (real Ollama + tiny model, offline after the
# first build) and the infill gRPC server in front of it, in the foreground.
#
#   scripts/run.sh [infill-server flags...]
#
# With a real model instead of the tiny one, skip this script and run the
# server against your Ollama (see README: "Using a real model").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! command -v go >/dev/null; then
  echo "run.sh: Go is required (https://go.dev/dl)" >&2
  exit 1
fi
"$root/scripts/backend.sh" up >/dev/null
eval "$("$root/scripts/backend.sh" env)"

listen="${INFILL_LISTEN:-127.0.0.1:50051}"
mkdir -p "$root/bin"
go build -o "$root/bin/infill-server" ./server/cmd/infill-server

cat <<MSG
infill: backend at $OLLAMA_HOST (model ${INFILL_MODEL:-infill-tiny}), gRPC on $listen.
Ask for a completion (reflection is on, no proto file needed; grpcurl: go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4):

  grpcurl -plaintext -d '{"repository":{"name":"demo","files":[{"path":"m.py","content":"def add(a, b):\n    return \n"}]},
    "cursor":{"path":"m.py","line":1,"column":11},"generation":{"max_tokens":16}}' \\
    $listen infill.v1.CompletionService/StreamComplete

The tiny model has random weights: expect tokens, not sensible code. Ctrl-C stops the server;
scripts/backend.sh down stops the backend.
MSG
extra=()
# The HumanEval infilling sets, when the project's shared data sits beside
# the checkout, become benchmarks for RunBenchmark.
if [ -d "$root/../shared/data/human-eval-infilling" ]; then
  extra+=(--humaneval-dir "$(cd "$root/../shared/data/human-eval-infilling" && pwd)")
fi
mkdir -p "$root/.state/results"
exec "$root/bin/infill-server" --listen "$listen" --ollama-url "$OLLAMA_HOST" \
  --model "${INFILL_MODEL:-infill-tiny}" --num-ctx "${INFILL_NUM_CTX:-8192}" \
  --results-dir "$root/.state/results" "${extra[@]}" "$@"
