#!/usr/bin/env bash
# The soak benchmark in one command: the real local Ollama with the tiny
# model (scripts/backend.sh up, on its own port so that nobody else's
# requests land on it), infill-server built from this checkout with
# --metrics-listen, and bench/soak driving it; the report names the commit
# measured. Run it on a quiet machine: it measures the server's goroutines,
# memory and the backend's CPU.
#
# Usage: bench/soak/run.sh [-n REQUESTS] [-c CONCURRENCY] [-o REPORT] [-- bench/soak flags, e.g. -warmup 300]
#   defaults: -n 10000 -c 16 -o bench/soak/results/REPORT.md
# Environment: INFILL_OLLAMA_HOST (default 127.0.0.1:11439) and the rest of
# scripts/backend.sh's; a backend this script started is stopped at the end.
# INFILL_SOAK_CACHE_BYTES (default 1 MiB, the least allowed): the server's
# --cache-bytes. Every request sends a new version of its cursor file, which
# the content store keeps (about 0.75 KB each) until its cap: at the default
# 512 MiB the store would grow through any run this long, so the soak caps
# it low, to reach the cap early and evict for the rest of the run (memory
# must stay flat while the caches are full).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

n=10000
c=16
out="$root/bench/soak/results/REPORT.md"
while getopts "n:c:o:" opt; do
  case "$opt" in
    n) n="$OPTARG" ;;
    c) c="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

export INFILL_OLLAMA_HOST="${INFILL_OLLAMA_HOST:-127.0.0.1:11439}"
model="${INFILL_MODEL:-infill-tiny}"
commit="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- . ':!bench/soak/results' || commit="$commit (with uncommitted changes)"

work="$(mktemp -d "${TMPDIR:-/tmp}/infill-soak.XXXXXX")"
started_backend=false
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if $started_backend; then
    scripts/backend.sh down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if ! scripts/backend.sh status >/dev/null 2>&1; then
  started_backend=true
fi
scripts/backend.sh up >/dev/null
ollama_pid="$(scripts/backend.sh status | sed -nE 's/^running: pid ([0-9]+),.*/\1/p')"
[[ -n "$ollama_pid" ]] || { echo "soak: cannot tell the backend's pid" >&2; exit 1; }

echo "soak: building infill-server at $commit" >&2
go build -o "$work/infill-server" ./server/cmd/infill-server
go build -o "$work/soak" ./bench/soak

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
grpc_addr="127.0.0.1:$(free_port)"
metrics_addr="127.0.0.1:$(free_port)"
# Evaluation needs no sandbox here; the HTTP surfaces are not exercised.
# --pprof: the soak forces a collection before each reading and lists the
# goroutines by stack (loopback only).
"$work/infill-server" --listen "$grpc_addr" --http-listen "" --metrics-listen "$metrics_addr" --pprof \
  --ollama-url "http://$INFILL_OLLAMA_HOST" --model "$model" --num-ctx 4096 --log-level warn \
  --cache-bytes "${INFILL_SOAK_CACHE_BYTES:-1048576}" \
  >"$work/infill-server.log" 2>&1 &
server_pid=$!

echo "soak: infill-server pid $server_pid on $grpc_addr (metrics $metrics_addr), backend pid $ollama_pid on $INFILL_OLLAMA_HOST; logs in $work" >&2
"$work/soak" -addr "$grpc_addr" -metrics "http://$metrics_addr/metrics" -ollama "http://$INFILL_OLLAMA_HOST" \
  -ollama-pid "$ollama_pid" -n "$n" -c "$c" -out "$out" -commit "$commit" "$@"
