#!/usr/bin/env bash
# The main job: the infill server in the foreground, in front of an Ollama.
# On a bare Debian/Ubuntu machine with Go it installs what it needs
# (scripts/setup.sh) and needs no other step.
#
#   scripts/run.sh [infill-server flags...]
#
# Every flag but --ollama-url and --model goes to infill-server as it is
# (--listen, --http-listen, --workspace, --eval-repo-root, ...; the last
# one given wins).
#
# Which Ollama (docs/development.md, "Which Ollama"):
#   - --ollama-url, else INFILL_OLLAMA_URL, else OLLAMA_HOST names one: it
#     must answer, or run.sh stops with an error (a typo in a GPU host's
#     address never turns into the local test backend);
#   - else Ollama's default 127.0.0.1:11434, if it answers;
#   - the model: --model (or INFILL_MODEL) must be on that Ollama, or run.sh
#     stops with the fix (ollama pull); without --model, its Qwen2.5-Coder
#     base model, and when it has none run.sh says so and pulls
#     qwen2.5-coder:1.5b-base through the Ollama's API (POST /api/pull) with
#     a progress line;
#   - the tiny random-weight model under a real model's name (an older
#     run.sh made such) is never used: scripts/setup.sh find-ollama says how
#     it is recognised and how to remove it;
#   - the local backend (scripts/backend.sh up: Ollama built from go.mod's
#     pin, serving the tiny random-weight model, always as infill-tiny)
#     when no Ollama answers at the default address and no real --model was
#     asked for (a fresh machine: no question asked), or when the pull at
#     the default address failed (offline): the last lines say why.
#
# The local backend is supervised while the server runs (scripts/backend.sh
# supervise): an `ollama serve` that exits or dies is restarted, with a log
# line, so calls resume without restarting the server.
#
# Once the server listens, run.sh prints the addresses it listens on (from
# the server's --addr-file: the truth, :0 ports resolved), the model, a
# first completion over HTTP and gRPC, and the next step for editors.
#
# The first run prints a line per phase with its time: packages, Go modules,
# the Ollama cgo build, the tokenizer npm fetch, the tiny model, the server.
#
# Environment: INFILL_LISTEN (gRPC, default 127.0.0.1:50051),
# INFILL_HTTP_LISTEN (the editors' HTTP surfaces; the server's default
# 127.0.0.1:8012 when unset, none when empty), INFILL_RESULTS_DIR,
# INFILL_NUM_CTX, INFILL_MODEL, INFILL_OLLAMA_URL, INFILL_PULL_STALL (seconds
# without progress before a pull is given up, default 120),
# INFILL_DEFAULT_OLLAMA (where to look when nothing names an Ollama: default
# Ollama's own 127.0.0.1:11434; the tests point it elsewhere), and
# scripts/backend.sh's INFILL_* for the local backend.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

t0=$SECONDS
say() { printf 'run.sh: [%4ss] %s\n' "$((SECONDS - t0))" "$*" >&2; }
die() {
  say "$*"
  exit 1
}

if ! command -v go >/dev/null; then
  echo "run.sh: Go is required (https://go.dev/dl)" >&2
  exit 1
fi

# --ollama-url and --model among the server flags (as -x, --x, x=v or x v)
# are taken out: run.sh passes the backend and model it chose.
url_flag="" model_flag="" url_set=0 args=()
while (($# > 0)); do
  case "$1" in
    -ollama-url=* | --ollama-url=*) url_flag="${1#*=}" url_set=1 ;;
    -model=* | --model=*) model_flag="${1#*=}" ;;
    -ollama-url | --ollama-url)
      url_flag="${2:-}" url_set=1
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
tiny=infill-tiny
default_model=qwen2.5-coder:1.5b-base

# Who named the Ollama, if anyone.
url="" url_from=""
if ((url_set)); then
  url="$url_flag" url_from="--ollama-url"
elif [[ -n "${INFILL_OLLAMA_URL:-}" ]]; then
  url="$INFILL_OLLAMA_URL" url_from="INFILL_OLLAMA_URL"
elif [[ -n "${OLLAMA_HOST:-}" ]]; then
  url="$OLLAMA_HOST" url_from="OLLAMA_HOST"
fi
if ((url_set)) && [[ -z "$url" ]]; then
  die "--ollama-url is empty: give the Ollama's URL (e.g. http://gpu1:11434), or leave the flag out"
fi
if [[ "${want_model,,}" == "$tiny:latest" ]]; then want_model="$tiny"; fi
# Where Ollama listens when nothing names one (its own default).
default_url="${INFILL_DEFAULT_OLLAMA:-127.0.0.1:11434}"

# 1. An Ollama that already runs (asked before anything is installed but
# the Go client that asks it, scripts/ollamasetup: on a bare machine its
# first build needs the build group's certificates for the module proxy).
local_backend=0 fallback_why="" ollama_url="" model=""
find_rc=0
at="${url:-$default_url}"
found="$(INFILL_MODEL="$want_model" "$root/scripts/setup.sh" find-ollama "$at")" || find_rc=$?
case "$find_rc" in
  0)
    ollama_url="${found%% *}"
    model="${found#* }"
    ;;
  1)
    if [[ -n "$url_from" ]]; then
      die "no Ollama answers at $url ($url_from). Check the address and that Ollama runs there (ollama serve; OLLAMA_HOST=0.0.0.0 for other machines to reach it), or leave $url_from unset for the local test backend."
    elif [[ -n "$want_model" && "$want_model" != "$tiny" ]]; then
      die "--model $want_model: no Ollama answers at $at (Ollama's default address) to serve it. Install Ollama (https://ollama.com) and run: ollama pull $want_model; or name the Ollama that has it with --ollama-url; or leave --model out for the local test backend (tiny random-weight model)."
    fi
    local_backend=1
    ;;
  2)
    if [[ -n "$want_model" && "$want_model" != "$tiny" ]]; then
      die "--model $want_model: the Ollama at $at does not have it. Pull it there (on that machine: ollama pull $want_model), or leave --model out (run.sh then uses its Qwen2.5-Coder base model, or pulls $default_model)."
    elif [[ "$want_model" == "$tiny" ]]; then
      if [[ -n "$url_from" ]]; then
        die "--model $tiny: the Ollama at $url ($url_from) does not have the tiny test model; leave $url_from unset for the local test backend, which serves it."
      fi
      local_backend=1
    else
      say "backend: the Ollama at $at answers but has no Qwen2.5-Coder base model: pulling $default_model (about 1 GB) into it through its API (POST /api/pull)"
      # pull-model prints why it failed on stdout; its progress goes to
      # stderr (a line in place on a terminal).
      if why="$("$root/scripts/setup.sh" pull-model "$at" "$default_model")"; then
        found="$(INFILL_MODEL="$default_model" "$root/scripts/setup.sh" find-ollama "$at")" ||
          die "pulled $default_model, but the Ollama at $at does not list it"
        ollama_url="${found%% *}"
        model="${found#* }"
      else
        if [[ -n "$url_from" ]]; then
          die "the Ollama at $url ($url_from) has no Qwen2.5-Coder base model, and pulling $default_model into it failed: ${why:-no answer}. Pull one there when it can reach the registry (ollama pull $default_model), or pass --model with a model it has."
        fi
        fallback_why="the Ollama at $at has no Qwen2.5-Coder base model, and pulling $default_model into it failed (offline?): ${why:-no answer}. For real completions: ollama pull $default_model when it is online, then run scripts/run.sh again."
        local_backend=1
      fi
    fi
    ;;
  3)
    die "--model $want_model at $at is infill's tiny random-weight test model under a real model's name (see above): remove it there and pull the real one, or leave --model out."
    ;;
  *)
    die "scripts/setup.sh find-ollama failed (exit status $find_rc; its error is above)"
    ;;
esac

groups=(build sandbox)
if ((local_backend)); then
  say "backend: the local one (scripts/backend.sh: Ollama built from go.mod's pin, tiny random-weight model $tiny)"
  mapfile -t groups < <(printf '%s\n' "${groups[@]}" $("$root/scripts/backend.sh" missing) | awk '!seen[$0]++')
else
  say "backend: using the Ollama at $ollama_url with model $model (nothing of Ollama is built)"
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
# time (their own lines say how long each took), then `ollama serve`. Its
# model is always the tiny model's own name.
if ((local_backend)); then
  "$root/scripts/backend.sh" up >/dev/null
  eval "$("$root/scripts/backend.sh" env)"
  ollama_url="$OLLAMA_HOST"
  model="$tiny"
  say "backend: $model at $ollama_url (scripts/backend.sh down stops it)"
fi

# 5. The server. Built beside, then renamed over, a running copy (under a
# name of its own: two run.sh at once never write the same file).
say "server build: go build ./server/cmd/infill-server"
mkdir -p "$root/bin"
newbin="$(mktemp "$root/bin/.infill-server.XXXXXX")"
if ! go build -o "$newbin" ./server/cmd/infill-server; then
  rm -f "$newbin"
  die "go build ./server/cmd/infill-server failed (above)"
fi
mv -f "$newbin" "$root/bin/infill-server"
say "server build: done"

results="${INFILL_RESULTS_DIR:-$root/.state/results}"
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
tmp="$(mktemp -d "${TMPDIR:-/tmp}/infill-run.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# The server runs as run.sh's child (not exec'd): run.sh prints the
# addresses it reports once it listens, then waits for it, passing on
# SIGINT and SIGTERM.
"$root/bin/infill-server" --listen "${INFILL_LISTEN:-127.0.0.1:50051}" --ollama-url "$ollama_url" \
  --model "$model" --num-ctx "${INFILL_NUM_CTX:-8192}" \
  --results-dir "$results" "${extra[@]}" "${args[@]}" --addr-file "$tmp/addrs" </dev/null &
server=$! stopping=0
trap 'stopping=1; kill -TERM "$server" 2>/dev/null || true' TERM
trap 'stopping=1; kill -INT "$server" 2>/dev/null || true' INT
while [[ ! -s "$tmp/addrs" ]]; do
  if ! kill -0 "$server" 2>/dev/null; then
    rc=0
    wait "$server" || rc=$?
    ((stopping)) && exit "$rc"
    die "infill-server exited before listening (status $rc; its error is above)"
  fi
  sleep 0.1
done
grpc_addr="" http_addr=""
while IFS='=' read -r kind addr; do
  case "$kind" in
    grpc) grpc_addr="$addr" ;;
    http) http_addr="$addr" ;;
  esac
done <"$tmp/addrs"
# Where a client connects: a wildcard listen address means this machine.
connect() {
  case "$1" in
    0.0.0.0:*) printf '127.0.0.1:%s' "${1##*:}" ;;
    "[::]":*) printf '[::1]:%s' "${1##*:}" ;;
    *) printf '%s' "$1" ;;
  esac
}
tls=0
for a in "${args[@]}"; do
  case "$a" in -tls-cert* | --tls-cert*) tls=1 ;; esac
done
[[ -n "${INFILL_TLS_CERT:-}" ]] && tls=1
scheme=http grpc_plain=-plaintext
if ((tls)); then scheme=https grpc_plain=-insecure; fi

{
  echo
  echo "infill is listening (model $model, backend $ollama_url):"
  printf '  gRPC  %-28s infill.v1.CompletionService and EvaluationService; reflection on\n' "$grpc_addr"
  if [[ -n "$http_addr" ]]; then
    printf '  HTTP  %-28s editor plugins: llama.cpp /infill, Ollama /api/generate, OpenAI and Tabby /v1/completions\n' "$scheme://$http_addr"
  else
    echo "  HTTP  none (--http-listen is empty)"
  fi
  echo
  if [[ -n "$http_addr" ]]; then
    echo "A first completion over HTTP:"
    echo "  curl -s $scheme://$(connect "$http_addr")/v1/completions -H 'Content-Type: application/json' \\"
    echo "    -d '{\"model\":\"$model\",\"prompt\":\"def add(a, b):\\n    return \",\"suffix\":\"\\n\",\"max_tokens\":16}'"
  fi
  echo "Over gRPC (grpcurl: scripts/setup.sh tool grpcurl installs the pinned one and prints its path):"
  echo "  grpcurl $grpc_plain -d '{\"repository\":{\"name\":\"demo\",\"files\":[{\"path\":\"m.py\",\"content\":\"def add(a, b):\\n    return \\n\"}]},"
  echo "    \"cursor\":{\"path\":\"m.py\",\"line\":1,\"column\":11},\"generation\":{\"max_tokens\":16}}' \\"
  echo "    $(connect "$grpc_addr") infill.v1.CompletionService/StreamComplete"
  echo
  if [[ -n "$http_addr" ]]; then
    echo "Editors: point your plugin at $scheme://$(connect "$http_addr") (model $model); any LSP editor:"
  else
    echo "Editors: any LSP editor:"
  fi
  echo "  go build -o bin/infill ./clients/cmd/infill && bin/infill lsp --server $(connect "$grpc_addr")"
  echo "  (docs/editors.md has each editor's settings)"
  echo "Ctrl-C stops the server."
  if [[ "$model" == "$tiny" ]] && ((!local_backend)); then
    echo
    echo "$tiny, as you asked, is the tiny test model: random weights, expect tokens, not sensible code."
  fi
  if ((local_backend)); then
    echo
    echo "The local test backend's $tiny has random weights: expect tokens, not sensible code (scripts/backend.sh down stops it)."
    if [[ -n "$fallback_why" ]]; then
      echo "Why not a real model: $fallback_why"
    else
      echo "Why not a real model: no Ollama answers at $at. For real completions, install Ollama (https://ollama.com), then run scripts/run.sh again (it pulls $default_model), or pass --ollama-url of an Ollama that has one."
    fi
  fi
  echo
} >&2

if ((local_backend)); then
  # While the server runs, a backend that exits or dies is restarted, with
  # a log line and a backoff; the server's health reports it down meanwhile
  # and the calls resume once it is back.
  "$root/scripts/backend.sh" supervise "$$" </dev/null &
fi
rc=0
while true; do
  wait "$server" && rc=0 || rc=$?
  # A trapped signal ends the wait early: wait again until the server has
  # finished its graceful shutdown.
  kill -0 "$server" 2>/dev/null || break
done
exit "$rc"
