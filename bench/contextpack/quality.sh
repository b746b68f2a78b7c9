#!/usr/bin/env bash
# Measure context quality on a set of repos.txt's repositories with
# contextpack/cmd/cpquality (docs/context-quality.md). Usage:
#   bench/contextpack/quality.sh SET OUT [cpquality flags...]
# SET: held-out (the built-in repositories plus the held-out set: the
# figures quality claims are judged on), tuning (the tuning set alone),
# or builtin. OUT names the outputs: OUT.md (report) and OUT.jsonl.gz (one
# line per prompt with its manifest). REPOS (default ../repos beside the
# repository root) is where bench/contextpack/repos.sh checked them out;
# REPOS_LIST (default repos.txt beside this script) is the list of them.
# Defaults: 360 samples per repository, seed 1, budgets 1k-8k, every
# strategy; later flags override them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
set_=${1:?usage: quality.sh SET OUT [flags]}
out=${2:?usage: quality.sh SET OUT [flags]}
shift 2
repos=${REPOS:-$root/../repos}
dirs=()
builtin=false
case $set_ in
held-out) builtin=true ;;
tuning) ;;
builtin) builtin=true ;;
*) echo "unknown set $set_" >&2; exit 2 ;;
esac
if [ "$set_" != builtin ]; then
	while read -r set name _lang _url commit; do
		[ "$set" = "$set_" ] || continue
		got=$(git -C "$repos/$name" rev-parse HEAD 2>/dev/null || true)
		if [ "$got" != "$commit" ]; then
			echo "$repos/$name is not at $commit: run bench/contextpack/repos.sh" >&2
			exit 1
		fi
		dirs+=(-dir "$name=$repos/$name")
	done < <(grep -v '^#' "${REPOS_LIST:-$here/repos.txt}")
fi
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/cpquality" ./contextpack/cmd/cpquality
"$work/cpquality" -builtin="$builtin" -shared "$root/../shared" -samples 360 -seed 1 \
	-budgets 1024,2048,4096,8192 "${dirs[@]}" -md "$out.md" -manifests "$out.jsonl.gz" "$@"
