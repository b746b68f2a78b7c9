#!/usr/bin/env bash
# The test suite, offline after the first build. On a bare Debian/Ubuntu
# machine with Go it first installs every package the tests use
# (scripts/setup.sh packages all: one apt-get run, only when some are
# missing), then prepares the real backend (Ollama built from the pinned
# module + the tiny model), then runs go vet and the Go tests.
#
#   scripts/test.sh [go test flags...]     e.g. -run X, -short
#
# By default (a developer's run) it passes -short: the few longest proofs
# skip. With CI=true (as .ci/run sets) the whole suite runs, and a missing
# dependency fails a test instead of skipping it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

t0=$SECONDS
say() { printf 'test.sh: [%4ss] %s\n' "$((SECONDS - t0))" "$*" >&2; }

if ! command -v go >/dev/null; then
  echo "test.sh: Go is required (https://go.dev/dl)" >&2
  exit 1
fi

say "packages: checking all groups (scripts/setup.sh list says why each is needed)"
"$root/scripts/setup.sh" packages all
say "Go modules: downloading what go.mod needs"
go mod download
say "backend: preparing the Ollama binary and the tiny model"
"$root/scripts/backend.sh" prepare >/dev/null

short=(-short)
if [[ "${CI:-}" == true ]]; then
  short=()
fi
say "go vet ./..."
go vet ./...
flags=(-count=1 -timeout 45m "${short[@]}" "$@")
say "go test ${flags[*]} ./... (CI=${CI:-unset})"
go test "${flags[@]}" ./...
say "done"
