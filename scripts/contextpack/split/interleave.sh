#!/usr/bin/env bash
# Times contextpack's warm builds at two commits in one process, build by
# build (interleave/main.go): the OLD commit's contextpack is copied into a
# scratch tree of the NEW commit as contextpack/internal/oldcp (import paths
# rewritten), so both run on the same requests, alternating, and machine
# load falls on both alike. Prints each workload's medians, p90s and the
# median of the per-build ratios new/old with its 95% confidence interval.
#
#   scripts/contextpack/split/interleave.sh OLD NEW [-edits N] [-keys N] [-budget N] [-dir name=path]...
#   scripts/contextpack/split/interleave.sh b573f23 HEAD
#
# Without -dir it times a synthetic Go repository (warm edits and typing);
# with -dir, warm edits in each named local repository instead (read as
# cpquality -dir reads one), each repository with fresh builders.
# Writes interleave-OLD-NEW.txt beside this script, or to $OUT.
set -euo pipefail
old=$1 new=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
oldc=$(git -C "$root" rev-parse --short "$old")
newc=$(git -C "$root" rev-parse --short "$new")
mkdir -p "$work/tree" "$work/old"
git -C "$root" archive "$newc" | tar -x -C "$work/tree"
git -C "$root" archive "$oldc" contextpack | tar -x -C "$work/old"
oldcp=$work/tree/contextpack/internal/oldcp
mv "$work/old/contextpack" "$oldcp"
rm -rf "$oldcp/cmd"
find "$oldcp" -name '*_test.go' -delete
find "$oldcp" -name '*.go' -exec sed -i 's#"github.com/infill-dev/infill/contextpack#"github.com/infill-dev/infill/contextpack/internal/oldcp#' {} +
mkdir -p "$work/tree/contextpack/cmd/interleave"
grep -v '^//go:build ignore' "$here/interleave/main.go" >"$work/tree/contextpack/cmd/interleave/main.go"
(cd "$work/tree" && go build -o "$work/interleave" ./contextpack/cmd/interleave)
out=${OUT:-$here/interleave-$oldc-$newc.txt}
{
	echo "commits: old $oldc (contextpack tree $(git -C "$root" rev-parse "$oldc:contextpack")), new $newc (contextpack tree $(git -C "$root" rev-parse "$newc:contextpack"))"
	echo "command: scripts/contextpack/split/interleave.sh $old $new $*"
	echo "go: $(go version)"
	echo "uptime before: $(uptime)"
	(cd "$work/tree" && "$work/interleave" "$@")
	echo "uptime after: $(uptime)"
} >"$out"
cat "$out"
