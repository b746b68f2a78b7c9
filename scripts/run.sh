#!/usr/bin/env bash
# The main job: the infill gRPC server in the foreground, in front of an
# Ollama. On a bare Debian/Ubuntu machine with Go it installs what it needs
# (scripts/setup.sh) and needs no other step.
#
#   scripts/run.sh [infill-server flags...]
#
# Which Ollama: first the one --ollama-url (or INFILL_OLLAMA_URL, or
# OLLAMA_HOST) names, else
# Ollama's default 127.0.0.1:11434: when it answers and has a Qwen2.5-Coder
# base model (or exactly the model INFILL_MODEL / --model names), the server
# uses it and nothing of Ollama is built. Otherwise the local backend
# (scripts/backend.sh up: Ollama built from the pinned module, serving the
# tiny random-weight model; offline after the first build) is started. It says
# which it chose.
#
# The local backend is supervised while the server runs (scripts/backend.sh
# supervise): an `ollama serve` that exits or dies is restarted, with a log
# line, so calls resume without restarting the server.
#
# The first run prints a line per phase with its time: packages, Go modules,
# the Ollama cgo build, the tokenizer npm fetch, the tiny model, the server.
#
# Environment: INFILL_LISTEN (gRPC, default 127.0.0.1:50051),
# INFILL_HTTP_LISTEN (the editors' HTTP surfaces; the server's default when
# unset, none when empty), INFILL_RESULTS_DIR, INFILL_NUM_CTX, INFILL_MODEL,
# INFILL_OLLAMA_URL, and scripts/backend.sh's INFILL_* for the local backend.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

t0=$SECONDS
say() { printf 'run.sh: [%4ss] %s\n' "$((SECONDS - t0))" "$*" >&2; }

if ! command -v go >/dev/null; then
  echo "run.sh: Go is required (https://go.dev/dl)" >&2
  exit 1
fi

# --ollama-url and --model among the server flags (as -x, --x, x=v or x v)
# are taken out: run.sh passes the backend and model it chose.
url_flag="" model_flag="" args=()
while (($# > 0)); do
  case "$1" in
    -ollama-url=* | --ollama-url=*) url_flag="${1#*=}" ;;
    -model=* | --model=*) model_flag="${1#*=}" ;;
    -ollama-url | --ollama-url)
      url_flag="${2:-}"
      shift
      ;;
    -model | --model)
      model_flag="${2:-}"
      shift
      ;;
    *) args+=("$1") ;;
  esac
  shift || true
done
want_model="${model_flag:-${INFILL_MODEL:-}}"

# 1. An Ollama that already runs (asked before anything is installed).
groups=(build sandbox)
if found="$(INFILL_MODEL="$want_model" "$root/scripts/setup.sh" find-ollama "${url_flag:-${INFILL_OLLAMA_URL:-${OLLAMA_HOST:-}}}")"; then
  ollama_url="${found%% *}"
  model="${found#* }"
  say "backend: using the Ollama at $ollama_url with model $model (nothing of Ollama is built)"
  local_backend=0
else
  say "backend: the local one (scripts/backend.sh: Ollama built from go.mod's pin, tiny random-weight model)"
  local_backend=1
  mapfile -t groups < <(printf '%s\n' "${groups[@]}" $("$root/scripts/backend.sh" missing) | awk '!seen[$0]++')
fi

# 2. Debian packages: one apt-get run, only when some are missing.
say "packages: checking ${groups[*]}"
"$root/scripts/setup.sh" packages "${groups[@]}"
say "packages: ready"

# 3. infill's Go modules (a no-op when cached).
say "Go modules: downloading what go.mod needs"
go mod download
say "Go modules: ready"

# 4. The local backend: Ollama build, tokenizer fetch and tiny model the first
# time (their own lines say how long each took), then `ollama serve`.
if ((local_backend)); then
  # The tiny model is created under the name asked for, if any.
  if [[ -n "$want_model" ]]; then export INFILL_MODEL="$want_model"; fi
  "$root/scripts/backend.sh" up >/dev/null
  eval "$("$root/scripts/backend.sh" env)"
  ollama_url="$OLLAMA_HOST"
  model="${INFILL_MODEL:-infill-tiny}"
  say "backend: $model at $ollama_url (scripts/backend.sh down stops it)"
fi

# 5. The server. Built beside, then renamed over, a running copy.
say "server build: go build ./server/cmd/infill-server"
mkdir -p "$root/bin"
go build -o "$root/bin/.infill-server.new" ./server/cmd/infill-server
mv -f "$root/bin/.infill-server.new" "$root/bin/infill-server"
say "server build: done"

listen="${INFILL_LISTEN:-127.0.0.1:50051}"
results="${INFILL_RESULTS_DIR:-$root/.state/results}"
cat <<MSG
infill: backend $ollama_url (model $model), gRPC on $listen.
Ask for a completion (reflection is on, no proto file needed; grpcurl: scripts/setup.sh tool grpcurl
installs the pinned one and prints its path):

  grpcurl -plaintext -d '{"repository":{"name":"demo","files":[{"path":"m.py","content":"def add(a, b):\n    return \n"}]},
    "cursor":{"path":"m.py","line":1,"column":11},"generation":{"max_tokens":16}}' \\
    $listen infill.v1.CompletionService/StreamComplete

Ctrl-C stops the server.
MSG
if ((local_backend)); then
  echo "The tiny model has random weights: expect tokens, not sensible code. scripts/backend.sh down stops the backend."
fi
extra=()
# The HumanEval infilling sets, when the project's shared data sits beside
# the checkout, become benchmarks for RunBenchmark.
if [ -d "$root/../shared/data/human-eval-infilling" ]; then
  extra+=(--humaneval-dir "$(cd "$root/../shared/data/human-eval-infilling" && pwd)")
fi
# INFILL_HTTP_LISTEN: the editor plugins' HTTP address (the server's default
# when unset, none when empty).
if [[ -v INFILL_HTTP_LISTEN ]]; then
  extra+=(--http-listen "$INFILL_HTTP_LISTEN")
fi
mkdir -p "$results"
if ((local_backend)); then
  # While the server runs (exec keeps this pid), a backend that exits or
  # dies is restarted, with a log line and a backoff; the server's health
  # reports it down meanwhile and the calls resume once it is back.
  "$root/scripts/backend.sh" supervise "$$" </dev/null &
fi
exec "$root/bin/infill-server" --listen "$listen" --ollama-url "$ollama_url" \
  --model "$model" --num-ctx "${INFILL_NUM_CTX:-8192}" \
  --results-dir "$results" "${extra[@]}" "${args[@]}"
