#!/usr/bin/env bash
# The whole test suite, offline after the first build: prepares the real
# backend (Ollama built from the pinned module + the tiny model), then runs
# every Go test. Extra arguments go to `go test` (e.g. -run, -short).
#
# Needs: Go, gcc/g++ (cgo), and the Debian packages .ci/run installs
# (nlohmann-json3-dev libstb-dev bubblewrap python3 python3-pytest neovim).
# Without them the tests that need them skip, except with CI=true.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

"$root/scripts/backend.sh" prepare >/dev/null

go vet ./...
go test -count=1 -timeout 45m "$@" ./...
