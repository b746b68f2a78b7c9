#!/usr/bin/env bash
# Sweep contextpack budget-split and fusion settings with the model-free
# quality tool and print fused's pooled code-identifier recall % per budget
# for each. Used to choose DefaultConfig's values; see README.md. Extra
# cpquality flags come from CPQ_FLAGS (e.g. the tuning repositories:
# CPQ_FLAGS="-builtin -dir ../repos/scrapy,../repos/caddy,../repos/lexical,../repos/jsoup").
# Usage: bench/contextpack/sweep.sh [samples] "Set1" "Set2" ...
set -euo pipefail
cd "$(dirname "$0")/../.."
samples=${1:-40}
shift || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/cpquality" ./contextpack/cmd/cpquality
for set in "$@"; do
	# shellcheck disable=SC2086 # CPQ_FLAGS is a list of flags
	out=$("$work/cpquality" -samples "$samples" -shared ../shared -strategies fused -set "$set" ${CPQ_FLAGS:-} 2>/dev/null)
	row=$(printf '%s\n' "$out" | sed -n '/^## Code-identifier recall, all/,/^[0-9]* samples;/p' | grep '^| fused')
	printf '%-60s %s\n' "${set:-defaults}" "$row"
done
