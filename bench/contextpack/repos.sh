#!/usr/bin/env bash
# Check out the measurement repositories named in repos.txt, each at its
# pinned commit, under DIR/<name> (default ../repos beside the repository
# root). Already present and at the commit: left alone. Usage:
#   bench/contextpack/repos.sh [DIR] [SET]     SET: tuning, held-out or all
# REPOS_LIST names another list in repos.txt's format (the tests' smoke run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list=${REPOS_LIST:-$here/repos.txt}
dest=${1:-$here/../../../repos}
want=${2:-all}
mkdir -p "$dest"
grep -v '^#' "$list" | while read -r set name _lang url commit; do
	[ -n "$set" ] || continue
	[ "$want" = all ] || [ "$want" = "$set" ] || continue
	dir=$dest/$name
	if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" = "$commit" ]; then
		echo "$name: at $commit"
		continue
	fi
	if [ ! -d "$dir/.git" ]; then
		git init -q "$dir"
		git -C "$dir" remote add origin "$url"
	fi
	git -C "$dir" fetch -q --depth 1 origin "$commit"
	git -C "$dir" -c advice.detachedHead=false checkout -q "$commit"
	echo "$name: checked out $commit"
done
