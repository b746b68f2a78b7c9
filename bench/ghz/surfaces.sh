#!/usr/bin/env bash
# HTTP surfaces against gRPC (issue 19): the same completion through gRPC
# Complete, POST /infill and POST /v1/completions of one infill-server built
# from this checkout, against the paced fake backend (fakeollama, 20 ms +
# 16 × 5 ms, as run.sh's paced phase), interleaved round by round.
#
#   bench/ghz/surfaces.sh [--rounds N] [--out DIR] [--smoke]
#
#   --rounds N  measured rounds (default 500; 30 unmeasured first)
#   --out DIR   where SURFACES.md and surfaces.json go (default bench/ghz/results)
#   --smoke     3 rounds after 2 unmeasured: seconds, figures meaningless; the
#               test suite's check that the benchmark works
#
# Everything runs on loopback and is stopped on exit. Environment
# (optional): GHZ_FAKE_PORT (11482), GHZ_GRPC_PORT (50182), GHZ_HTTP_PORT (18082).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds=500 warmup=30 out="$here/results"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) rounds=3 warmup=2 ;;
    --rounds) rounds="${2:?--rounds needs a number}"; shift ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "surfaces.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
fake_port="${GHZ_FAKE_PORT:-11482}"
grpc_port="${GHZ_GRPC_PORT:-50182}"
http_port="${GHZ_HTTP_PORT:-18082}"

work="$(mktemp -d "${TMPDIR:-/tmp}/infill-surfaces.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

commit="$(cd "$root" && git rev-parse --short HEAD)"
(cd "$root" && git diff --quiet HEAD -- . ':(exclude,glob)bench/**/results/**') || commit="$commit (with uncommitted changes)"
echo "surfaces: building infill-server, fakeollama, benchtool at $commit" >&2
(cd "$root" && go build -o "$work/" ./server/cmd/infill-server ./bench/fakeollama ./bench/ghz/benchtool)

"$work/fakeollama" -listen "127.0.0.1:$fake_port" -tokens 16 -token-delay 5ms -prompt-delay 20ms >"$work/fake.log" 2>&1 &
pids+=($!)
"$work/infill-server" --listen "127.0.0.1:$grpc_port" --http-listen "127.0.0.1:$http_port" \
  --ollama-url "http://127.0.0.1:$fake_port" --model infill-tiny --log-level warn --evaluation off \
  >"$work/server.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
"$work/benchtool" wait -infill "127.0.0.1:$grpc_port" -timeout 60s || { cat "$work/server.log" >&2; exit 1; }

mkdir -p "$out"
"$work/benchtool" surfaces -infill "127.0.0.1:$grpc_port" -http "http://127.0.0.1:$http_port" \
  -fake "http://127.0.0.1:$fake_port" -rounds "$rounds" -warmup "$warmup" -server-pid "$server_pid" \
  -out "$work/surfaces.json" -md "$work/SURFACES.md" -commit "$commit" \
  -note "$(printf '%s\n' "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores shared with other workers ($(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo))" \
    "uptime at start: \`$(uptime)\`" \
    "Backend: fakeollama, 16 tokens at 20 ms + i × 5 ms (fixed schedule), no parallelism limit; the server with its defaults (admission on, 1 slot: the calls are sequential)" \
    "Clients: gRPC with infill's codec (as the Go client), HTTP/1.1 keep-alive with Go's net/http; latency is the whole call, request sent to response read")"
cp "$work/surfaces.json" "$out/surfaces.json"
cp "$work/SURFACES.md" "$out/SURFACES.md"
if [[ -f "$here/SURFACES-NOTES.md" ]]; then # findings written after a run
  cat "$here/SURFACES-NOTES.md" >>"$out/SURFACES.md"
fi
cat "$out/SURFACES.md"
