#!/usr/bin/env bash
# Sweep contextpack budget-split and fusion settings with the model-free
# quality tool and print the "All" row of each (identifier recall % /
# coverage % per budget). Used to choose DefaultConfig's values; see
# QUALITY.md. Usage: scripts/contextpack/sweep.sh [samples] "Set1" "Set2" ...
set -euo pipefail
cd "$(dirname "$0")/../.."
samples=${1:-40}
shift || true
go build -o /tmp/cpquality ./contextpack/cmd/cpquality
for set in "$@"; do
	out=$(/tmp/cpquality -samples "$samples" -shared ../shared -strategies fused -set "$set" 2>/dev/null)
	row=$(printf '%s\n' "$out" | sed -n '/#### All/,/prompts per cell/p' | grep '^| fused')
	printf '%-60s %s\n' "${set:-defaults}" "$row"
done
