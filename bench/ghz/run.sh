#!/usr/bin/env bash
# Latency benchmark of infill: ghz (pinned v0.120.0, through server
# reflection) against Complete and StreamComplete with realistic payloads,
# the same prompts sent straight to Ollama for infill's overhead, and a
# controlled-latency fake backend for infill's own cost and ceiling.
#
#   bench/ghz/run.sh [--quick|--smoke] [--out DIR] [--no-real] [--no-fake]
#
#   --quick    fewer rounds and shorter runs (about 5 minutes instead of 25);
#              writes the report to the run directory unless --out is given
#   --smoke    the smallest run through every phase (payloads of 1 and 5
#              files, a few calls each, a small num_ctx): seconds, figures
#              meaningless; the test suite's check that the benchmark works
#              (bench/ghz/smoke_test.go). Report as with --quick
#   --out DIR  where REPORT.md and summary.json go
#              (default: bench/ghz/results for a full run)
#   --no-real  skip the phases on the real Ollama backend
#   --no-fake  skip the phases on fakeollama
#
# Everything runs on loopback and is stopped on exit (only what this script
# started). Raw results (ghz JSON with every call, pair samples, logs) stay in
# the run directory under $INFILL_STATE_DIR/ghz/.
#
# Environment (optional): INFILL_STATE_DIR, GHZ_OLLAMA_PORT (11471),
# GHZ_FAKE_PORT (11472), GHZ_GRPC_PORT (50171; the server on the fake uses
# the next port), GHZ_NUM_CTX (8192, the server default; 1024 with
# --smoke), GHZ_MAX_TOKENS (32; 4 with --smoke), GHZ_SIZES (1,50,500 files;
# 1,5 with --smoke), GHZ_BIN (the ghz binary; default the pinned one that
# scripts/setup.sh tool ghz installs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

quick=0 smoke=0 out="" do_real=1 do_fake=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --smoke) quick=1 smoke=1 ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    --no-real) do_real=0 ;;
    --no-fake) do_fake=0 ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[ghz %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }
command -v go >/dev/null || die "Go is required"

state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"
ollama_port="${GHZ_OLLAMA_PORT:-11471}"
fake_port="${GHZ_FAKE_PORT:-11472}"
grpc_port="${GHZ_GRPC_PORT:-50171}"
grpc_fake_port=$((grpc_port + 1))
num_ctx="${GHZ_NUM_CTX:-8192}"
max_tokens="${GHZ_MAX_TOKENS:-32}"
sizes="${GHZ_SIZES:-1,50,500}"
if ((smoke)); then
  num_ctx="${GHZ_NUM_CTX:-1024}"
  max_tokens="${GHZ_MAX_TOKENS:-4}"
  sizes="${GHZ_SIZES:-1,5}"
fi
model=infill-tiny

# Bounded work per mode: rounds/calls/durations, warm-ups, the ceiling's
# concurrencies.
real_warmup=2 fake_warmup=20 paced_warmup=5 ghz_warmup=20 ceiling_cs="1 4 16"
if ((smoke)); then
  real_rounds=1 real_calls=1 fake_rounds=3 paced_rounds=2 ceiling_s=1s
  real_warmup=1 fake_warmup=1 paced_warmup=1 ghz_warmup=2 ceiling_cs="4"
elif ((quick)); then
  real_rounds=6 real_calls=5 fake_rounds=60 paced_rounds=30 ceiling_s=3s
else
  real_rounds=30 real_calls=20 fake_rounds=300 paced_rounds=200 ceiling_s=10s
fi
ceiling_cap=200000 # calls; a run stops at whichever of duration and count comes first
fake_tokens=16 paced_token_delay=5ms paced_prompt_delay=20ms

run="$state/ghz/run-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$run"/{bin,ghz,pair,logs}
log "run directory: $run"
if [[ -z "$out" ]]; then
  if ((quick)); then out="$run/report"; else out="$here/results"; fi
fi

# --- processes we start, stopped on exit -------------------------------------
pids=()
backend_started=0
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  pids=()
  if ((backend_started)); then
    INFILL_OLLAMA_HOST="127.0.0.1:$ollama_port" "$root/scripts/backend.sh" down >/dev/null 2>&1 || true
    backend_started=0
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_pid() { # stop one process we started and forget it
  local pid="$1" keep=() p
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${pids[@]}"; do [[ "$p" == "$pid" ]] || keep+=("$p"); done
  pids=("${keep[@]}")
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- machine load marks ----------------------------------------------------
cpu_now() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat; }
phase_cpu=""
phase_begin() { phase_cpu="$(cpu_now)"; }
phase_end() { # phase name: loadavg and whole-machine CPU use since phase_begin
  local now t0 i0 t1 i1
  now="$(cpu_now)"
  read -r t0 i0 <<<"$phase_cpu"
  read -r t1 i1 <<<"$now"
  local busy="–"
  if ((t1 > t0)); then busy="$(awk -v t=$((t1 - t0)) -v i=$((i1 - i0)) 'BEGIN{printf "%.0f%%", 100*(t-i)/t}')"; fi
  printf '%s\t%s\t%s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" "$busy" >>"$run/load.txt"
}

# --- build --------------------------------------------------------------------
# The pinned ghz (scripts/setup.sh holds the version), installed once.
ghz="${GHZ_BIN:-}"
if [[ -z "$ghz" ]]; then
  ghz="$(INFILL_STATE_DIR="$state" "$root/scripts/setup.sh" tool ghz)" || die "installing ghz failed"
fi
log "building infill-server, benchtool, fakeollama"
(cd "$root" && go build -o "$run/bin/" ./server/cmd/infill-server ./bench/ghz/benchtool ./bench/fakeollama) ||
  die "build failed"
bt="$run/bin/benchtool"

goroot="$(go env GOROOT)"
"$bt" payload -src "$goroot/src" -n "$sizes" -max-tokens "$max_tokens" -out "$run/payloads" >"$run/logs/payloads.txt"
cat "$run/logs/payloads.txt" >&2
mapfile -t ns < <(tr ',' '\n' <<<"$sizes")
largest="${ns[-1]}"

# --- meta ------------------------------------------------------------------------
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M')"
  dirty="$(cd "$root" && git status --porcelain --untracked-files=no -- . ':!bench/ghz' 2>/dev/null | awk '{print $2}' | paste -sd' ')"
  echo "commit=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null)${dirty:+, built with uncommitted changes in: $dirty}"
  echo "cpu=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)"
  echo "cores=$(nproc), shared with other workers"
  echo "mem=$(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel=$(uname -sr)"
  echo "go=$(go env GOVERSION)"
  echo "ghz=$(go version -m "$ghz" | awk '$1=="mod" && $2=="github.com/bojand/ghz"{print $3}')"
  echo "ollama=$(cd "$root" && go list -m -f '{{.Version}}' github.com/ollama/ollama) (built from the pinned module), num_thread 1"
  echo "model=$model (tiny random-weight qwen2, real Qwen2.5 vocabulary)"
  echo "num_ctx=$num_ctx"
  echo "max_tokens=$max_tokens"
  echo "source=$goroot/src ($(go env GOVERSION))"
  echo "fake=fakeollama: $fake_tokens tokens; 0 ms, or ${paced_prompt_delay} + ${fake_tokens} × ${paced_token_delay} (paced, on a fixed schedule; one row chained)"
  echo "others=load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
  if ((smoke)); then echo "mode_flag=--smoke"; elif ((quick)); then echo "mode_flag=--quick"; else echo "mode_flag="; fi
} >"$run/meta.txt"

# --- helpers --------------------------------------------------------------------
start_server() { # port ollama-url name
  local port="$1" url="$2" name="$3"
  port_free "$port" || die "port $port is taken; set GHZ_GRPC_PORT"
  "$run/bin/infill-server" --listen "127.0.0.1:$port" --ollama-url "$url" --model "$model" \
    --num-ctx "$num_ctx" --log-json >"$run/logs/server-$name.log" 2>&1 &
  pids+=($!)
  server_pid=$!
  "$bt" wait -infill "127.0.0.1:$port" -timeout 60s || { tail -n 20 "$run/logs/server-$name.log" >&2; die "infill-server did not become SERVING"; }
}

start_fake() { # name [fakeollama flags...]
  local name="$1"
  shift
  port_free "$fake_port" || die "port $fake_port is taken; set GHZ_FAKE_PORT"
  "$run/bin/fakeollama" -listen "127.0.0.1:$fake_port" "$@" >"$run/logs/fake-$name.log" 2>&1 &
  pids+=($!)
  fake_pid=$!
  for _ in $(seq 100); do port_free "$fake_port" || return 0; sleep 0.1; done
  die "fakeollama did not start"
}

# ghz_run suite backend port payload method concurrency [ghz flags...]
ghz_run() {
  local suite="$1" backend="$2" port="$3" payload="$4" method="$5" c="$6"
  shift 6
  local name="$suite-$payload-$method-c$c" cpu0
  cpu0="$(server_cpu_ms)"
  "$ghz" --insecure --call "infill.v1.CompletionService/$method" \
    -D "$run/payloads/$payload.json" --disable-template-functions --disable-template-data \
    --max-send-message-size=64MiB --max-recv-message-size=16MiB \
    -c "$c" --connections 1 --name "$name" \
    --tags "{\"suite\":\"$suite\",\"backend\":\"$backend\",\"payload\":\"$payload\",\"method\":\"$method\",\"concurrency\":\"$c\"}" \
    -O json -o "$run/ghz/$name.json" "$@" "127.0.0.1:$port" ||
    die "ghz $name failed (see $run/ghz/$name.json)"
  echo $(($(server_cpu_ms) - cpu0)) >"$run/ghz/$name.cpu"
  [[ "$suite" == warmup ]] || log "ghz $name: $(summary_line "$run/ghz/$name.json")"
}

# infill-server's user+system CPU time in ms (10 ms ticks), all threads.
server_cpu_ms() { awk '{print ($14 + $15) * 10}' "/proc/$server_pid/stat"; }

summary_line() { # first top-level "count" and "rps" of a ghz JSON report
  local c r
  c="$(grep -o '"count":[0-9]*' "$1" | head -n 1 | cut -d: -f2)"
  r="$(grep -o '"rps":[0-9.e+-]*' "$1" | head -n 1 | cut -d: -f2)"
  printf '%s calls, %.1f rps' "$c" "$r"
}

# pair backend port ollama-url payload variant rounds [flags]
pair() {
  local backend="$1" port="$2" url="$3" payload="$4" variant="$5" rounds="$6"
  shift 6
  local digest=() name
  name="$(tr -c 'A-Za-z0-9.\n-' '-' <<<"$backend-$payload-$variant")"
  [[ "$variant" == digest* ]] && digest=(-digest)
  [[ "$variant" == snapshot* ]] && digest=(-snapshot) # only the cursor file, on the server's snapshot
  [[ "$variant" == *-typing ]] && digest+=(-typing) # a keystroke before every infill request
  "$bt" pair -infill "127.0.0.1:$port" -ollama "$url" -model "$model" -num-ctx "$num_ctx" \
    -payload "$run/payloads/$payload-full.json" "${digest[@]}" -rounds "$rounds" -backend "$backend" \
    -server-pid "$server_pid" -out "$run/pair/$name.json" "$@" >&2 || die "pair $name failed"
}

# --- phase 1: real backend ---------------------------------------------------------
if ((do_real)); then
  export INFILL_OLLAMA_HOST="127.0.0.1:$ollama_port"
  if "$root/scripts/backend.sh" status >/dev/null 2>&1; then
    die "an Ollama from backend.sh already runs on $INFILL_OLLAMA_HOST; stop it or set GHZ_OLLAMA_PORT"
  fi
  port_free "$ollama_port" || die "port $ollama_port is taken; set GHZ_OLLAMA_PORT"
  log "starting the real backend on $INFILL_OLLAMA_HOST"
  backend_started=1
  "$root/scripts/backend.sh" up >"$run/logs/backend-up.txt" 2>&1 || { cat "$run/logs/backend-up.txt" >&2; die "backend.sh up failed"; }
  ollama_url="http://$INFILL_OLLAMA_HOST"
  start_server "$grpc_port" "$ollama_url" ollama
  for n in "${ns[@]}"; do
    phase_begin
    # The first request of a new prompt evaluates ~num_ctx tokens on one
    # thread (tens of seconds); pair's warm-up pays it.
    log "real backend, n$n: pair (cold prompt first, then $real_rounds rounds)"
    if ((n == 1)); then
      pair ollama "$grpc_port" "$ollama_url" "n$n" full "$real_rounds" -warmup "$real_warmup"
      variants=(full)
    else
      pair ollama "$grpc_port" "$ollama_url" "n$n" digest "$real_rounds" -warmup "$real_warmup"
      if ((n == largest)); then
        pair ollama "$grpc_port" "$ollama_url" "n$n" snapshot "$real_rounds" -warmup "$real_warmup"
        pair ollama "$grpc_port" "$ollama_url" "n$n" full "$real_rounds" -warmup 1
      fi
      variants=(full digest)
    fi
    ghz_run warmup ollama "$grpc_port" "n$n-full" Complete 1 -n 2 -t 300s
    for v in "${variants[@]}"; do
      for m in Complete StreamComplete; do
        ghz_run ollama ollama "$grpc_port" "n$n-$v" "$m" 1 -n "$real_calls" -t 120s
      done
    done
    phase_end "real backend, n$n"
  done
  stop_pid "$server_pid"
  "$root/scripts/backend.sh" down >/dev/null 2>&1 || true
  backend_started=0
  unset INFILL_OLLAMA_HOST
fi

# --- phase 1b: the gRPC floor -------------------------------------------------------
# The same requests to a CompletionService that only waits 100 ms (its own
# process, same grpc-go): what any gRPC server pays per call on this machine.
mkdir -p "$run/floor"
phase_begin
log "gRPC floor: a no-op CompletionService, $paced_rounds calls per payload, payloads in turns"
floor_specs=()
for n in "${ns[@]}"; do
  if ((n == 1)); then
    floor_specs+=("$run/payloads/n$n-full.json:full:$run/floor/n$n-full.json")
  else
    floor_specs+=("$run/payloads/n$n-full.json:digest:$run/floor/n$n-digest.json")
  fi
done
floor_specs+=("$run/payloads/n$largest-full.json:snapshot:$run/floor/n$largest-snapshot.json")
"$bt" floor -rounds "$paced_rounds" "${floor_specs[@]}" >&2
phase_end "gRPC floor"

# --- phase 2: fake backend, zero latency: overhead and ceiling ------------------------
if ((do_fake)); then
  fake_url="http://127.0.0.1:$fake_port"
  start_fake zero -tokens "$fake_tokens"
  start_server "$grpc_fake_port" "$fake_url" fake-zero
  phase_begin
  log "fake backend (0 ms): pair, $fake_rounds rounds per payload"
  for n in "${ns[@]}"; do
    if ((n == 1)); then
      pair "fake 0 ms" "$grpc_fake_port" "$fake_url" "n$n" full "$fake_rounds" -warmup "$fake_warmup" -verify-fake "$fake_url" -zero-latency
    else
      pair "fake 0 ms" "$grpc_fake_port" "$fake_url" "n$n" digest "$fake_rounds" -warmup "$fake_warmup" -verify-fake "$fake_url" -zero-latency
    fi
  done
  pair "fake 0 ms" "$grpc_fake_port" "$fake_url" "n$largest" full "$((fake_rounds / 3))" -warmup "$paced_warmup" -verify-fake "$fake_url" -zero-latency
  # The same as the first row, the direct side sent with Ollama's Go client
  # (what infill uses): shows that client's own cost per call.
  pair "fake 0 ms, direct via api.Client" "$grpc_fake_port" "$fake_url" "n${ns[0]}" full "$fake_rounds" -warmup "$fake_warmup" \
    -verify-fake "$fake_url" -zero-latency -direct-api-client
  phase_end "fake 0 ms, pair"

  phase_begin
  log "fake backend (0 ms): ghz ceiling, $ceiling_s per run"
  for n in "${ns[@]}"; do
    p="n$n-digest"
    ((n == 1)) && p="n$n-full"
    ghz_run warmup fake "$grpc_fake_port" "n$n-full" Complete 1 -n "$ghz_warmup"
    for c in $ceiling_cs; do
      ghz_run ceiling fake "$grpc_fake_port" "$p" Complete "$c" -z "$ceiling_s" -n "$ceiling_cap"
    done
    ghz_run ceiling fake "$grpc_fake_port" "$p" StreamComplete 16 -z "$ceiling_s" -n "$ceiling_cap"
  done
  ghz_run ceiling fake "$grpc_fake_port" "n$largest-full" Complete 4 -z "$ceiling_s" -n "$ceiling_cap"
  phase_end "fake 0 ms, ghz ceiling"
  stop_pid "$server_pid"
  stop_pid "$fake_pid"

  # --- phase 3: fake backend with a steady latency, as from a small local model ----
  start_fake paced -tokens "$fake_tokens" -token-delay "$paced_token_delay" -prompt-delay "$paced_prompt_delay"
  start_server "$grpc_fake_port" "$fake_url" fake-paced
  phase_begin
  label="fake ${paced_prompt_delay}+${fake_tokens}×${paced_token_delay}"
  log "$label: pair, $paced_rounds rounds per payload"
  for n in "${ns[@]}"; do
    if ((n == 1)); then
      pair "$label" "$grpc_fake_port" "$fake_url" "n$n" full "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
    else
      pair "$label" "$grpc_fake_port" "$fake_url" "n$n" digest "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
      # Typing: a keystroke before every infill request, so the prompt memo
      # never answers. Only against the fake: Ollama's prompt cache would favour
      # whichever of two requests with the same keystroke runs second.
      pair "$label" "$grpc_fake_port" "$fake_url" "n$n" digest-typing "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
      if ((n == largest)); then
        pair "$label" "$grpc_fake_port" "$fake_url" "n$n" snapshot "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
        pair "$label" "$grpc_fake_port" "$fake_url" "n$n" snapshot-typing "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
      fi
    fi
  done
  stop_pid "$server_pid"
  stop_pid "$fake_pid"
  # The same pace chained (each token token-delay after the previous write),
  # as the fake paced before NOTES item 17: the difference is how much later
  # the fake's own tokens come when infill relays them on these shared cores.
  start_fake paced-chained -tokens "$fake_tokens" -token-delay "$paced_token_delay" -prompt-delay "$paced_prompt_delay" -schedule chained
  start_server "$grpc_fake_port" "$fake_url" fake-paced-chained
  pair "$label, chained" "$grpc_fake_port" "$fake_url" "n$largest" digest "$paced_rounds" -warmup "$paced_warmup" -verify-fake "$fake_url"
  phase_end "$label, pair"
  stop_pid "$server_pid"
  stop_pid "$fake_pid"
fi

echo "others_end=load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >>"$run/meta.txt"
"$bt" report -in "$run" -out "$out" -notes "$here/NOTES.md"
cleanup
rm -rf "$run/bin" # rebuilt every run; the results stay
log "done: $out/REPORT.md (raw results in $run)"
