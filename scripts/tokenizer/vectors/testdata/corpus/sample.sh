#!/usr/bin/env bash
set -euo pipefail
IFS=$'\n\t'
readonly DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for f in "$DIR"/*.log; do
	[[ -f "$f" ]] || continue
	lines=$(wc -l <"$f")
	if (( lines > 1000 )); then
		gzip -9 -- "$f" && echo "compressed $f ($lines lines)" >&2
	fi
done
awk -F: '$3 >= 1000 { printf "%-16s %s\n", $1, $7 }' /etc/passwd | sort -k2 || true
cat <<'HEREDOC'
  indented heredoc with $literal and `backticks`
HEREDOC
echo "${HOME:-/root}" "${#BASH_ARGV[@]}" $((2**10)) 2>/dev/null >&2
