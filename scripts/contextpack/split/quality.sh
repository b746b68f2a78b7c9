#!/usr/bin/env bash
# Runs contextpack/cmd/cpquality built from two commits with the same
# flags and shows that their recall and coverage tables are identical (the
# last table, build time per prompt, is a timing and differs by nature).
#
#   scripts/contextpack/split/quality.sh OLD NEW [cpquality flags]
#   scripts/contextpack/split/quality.sh b573f23 HEAD -samples 120 -seed 1
#
# Writes quality-OLD.md, quality-NEW.md (named by commit) beside this
# script and prints the diff of the tables (empty when they agree). An
# output already there for a commit and the same flags is reused.
set -euo pipefail
old=$1 new=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() { # commit -> binary path
	local c=$1 dir="$work/$1"
	mkdir -p "$dir"
	git -C "$root" archive "$c" | tar -x -C "$dir"
	(cd "$dir" && go build -o "$work/cpquality-$c" ./contextpack/cmd/cpquality)
	echo "$work/cpquality-$c"
}
oldc=$(git -C "$root" rev-parse --short "$old")
newc=$(git -C "$root" rev-parse --short "$new")
for c in "$oldc" "$newc"; do
	out=$here/quality-$c.md
	if [[ -f $out ]] && head -1 "$out" | grep -qF "commit $c; go run ./contextpack/cmd/cpquality $*;"; then
		echo "reusing $out"
		continue
	fi
	bin=$(build "$c")
	{
		echo "<!-- commit $c; go run ./contextpack/cmd/cpquality $*; started $(date -u +%FT%TZ); uptime:$(uptime); contextpack tree $(git -C "$root" rev-parse "$c:contextpack") -->"
		(cd "$root" && "$bin" "$@")
	} >"$out.tmp"
	mv "$out.tmp" "$out"
done
tables() { sed '/Mean build time per prompt/,$d' "$1" | grep -v '^<!--'; }
if diff <(tables "$here/quality-$oldc.md") <(tables "$here/quality-$newc.md"); then
	echo "recall and coverage tables identical: $oldc $newc"
else
	echo "recall and coverage tables DIFFER: $oldc $newc" >&2
	exit 1
fi
