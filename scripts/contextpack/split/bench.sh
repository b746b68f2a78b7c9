#!/usr/bin/env bash
# Compares contextpack's warm-build benchmarks of two commits side by side:
# builds both test binaries, then runs them alternately (old, new, old, ...)
# for ROUNDS rounds so that both see the same machine load, and summarises
# with benchstat (golang.org/x/perf/cmd/benchstat at the version below).
#
#   scripts/contextpack/split/bench.sh OLD NEW [ROUNDS]
#   scripts/contextpack/split/bench.sh b573f23 HEAD 8
#
# Writes bench-OLD-NEW.txt beside this script: the raw results of each
# binary and benchstat's table.
set -euo pipefail
old=$1 new=$2 rounds=${3:-8}
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GOBIN=$work go install "golang.org/x/perf/cmd/benchstat@$benchstat_version"
build() {
	local c=$1 dir="$work/$1"
	mkdir -p "$dir"
	git -C "$root" archive "$c" | tar -x -C "$dir"
	(cd "$dir" && go test -c -o "$work/contextpack-$c.test" ./contextpack)
}
oldc=$(git -C "$root" rev-parse --short "$old")
newc=$(git -C "$root" rev-parse --short "$new")
build "$oldc"
build "$newc"
out=$here/bench-$oldc-$newc.txt
run() { # commit: one round of the warm benchmarks
	(cd "$root/contextpack" && "$work/contextpack-$1.test" -test.run '^$' -test.bench "$bench" \
		-test.benchtime "$benchtime" -test.count 1) | grep -E '^Benchmark' >>"$work/$1.txt"
}
bench='^Benchmark(BuildWarmEdit|BuildTyping)$'
benchtime=400x
{
	echo "commits: old $oldc, new $newc; $rounds rounds, alternating; benchmarks $bench, -benchtime $benchtime"
	echo "contextpack trees: old $(git -C "$root" rev-parse "$oldc:contextpack"), new $(git -C "$root" rev-parse "$newc:contextpack")"
	echo "command: scripts/contextpack/split/bench.sh $old $new $rounds"
	echo "go: $(go version); benchstat $benchstat_version"
	echo "uptime before: $(uptime)"
} >"$out"
for i in $(seq "$rounds"); do
	if ((i % 2)); then run "$oldc"; run "$newc"; else run "$newc"; run "$oldc"; fi
done
{
	echo "uptime after: $(uptime)"
	echo
	"$work/benchstat" "old=$work/$oldc.txt" "new=$work/$newc.txt"
	echo
	echo "raw, old ($oldc):"; cat "$work/$oldc.txt"
	echo "raw, new ($newc):"; cat "$work/$newc.txt"
} >>"$out"
cat "$out"
