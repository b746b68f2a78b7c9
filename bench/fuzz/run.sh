#!/usr/bin/env bash
# Runs every Go fuzz target of the module (the HTTP decoders', the gRPC
# server's, the codec's, contextpack's and the tokenizer's: whatever
# `func FuzzXxx(f *testing.F)` the _test.go files hold) for a fixed time
# each, one after another, and prints a table: target, package, result and
# the crashers it found.
#
# A crasher is written by `go test -fuzz` itself to
# <package>/testdata/fuzz/<FuzzXxx>/<hash>; from then on the target's plain
# `go test` run replays it as a regression case. Commit those files with the
# fix (and keep them when the fix is in: they are the proof).
#
# Usage: bench/fuzz/run.sh [-t DURATION] [-o REPORT.md] [REGEXP]
#   -t DURATION  fuzzing time per target (default 60s; go test -fuzztime)
#   -o FILE      also write the table, with the commit measured, to FILE
#   REGEXP       only targets whose name matches (grep -E)
# Logs of each target go to $TMPDIR/infill-fuzz.*/<target>.log.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

fuzztime=60s
report=""
while getopts "t:o:" opt; do
  case "$opt" in
    t) fuzztime="$OPTARG" ;;
    o) report="$OPTARG" ;;
    *) echo "usage: $0 [-t DURATION] [-o REPORT.md] [REGEXP]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
filter="${1:-.}"

logs="$(mktemp -d "${TMPDIR:-/tmp}/infill-fuzz.XXXXXX")"
# dir<TAB>name for every fuzz target, in a stable order.
mapfile -t targets < <(grep -rnoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
  sed -E 's#^\./(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#\1\t\2#' | sort -u |
  awk -F'\t' -v re="$filter" '$2 ~ re')
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no target matches $filter" >&2
  exit 2
fi

crashers() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty=""
git diff --quiet HEAD 2>/dev/null || dirty=" (with uncommitted changes)"
rows=()
failed=0
echo "fuzz: ${#targets[@]} targets, $fuzztime each, at $commit$dirty; logs in $logs" >&2
for t in "${targets[@]}"; do
  dir="${t%%$'\t'*}"
  name="${t##*$'\t'}"
  before="$(crashers "$dir" "$name")"
  start=$SECONDS
  result=ok
  # Minimizing a new input is bounded by executions, not the default 60 s:
  # a target whose run starts a server per input (FuzzInfill) otherwise
  # spends its whole time minimizing one input, its exec count frozen.
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x "./$dir" >"$logs/$name.log" 2>&1; then
    result=FAIL
    failed=$((failed + 1))
  fi
  new="$(comm -13 <(printf '%s\n' "$before") <(crashers "$dir" "$name") | grep -v '^$' | sed "s#^#$dir/testdata/fuzz/$name/#" | paste -sd' ' || true)"
  execs="$(grep -oE 'execs: [0-9]+' "$logs/$name.log" | tail -n 1 | cut -d' ' -f2 || true)"
  rows+=("| \`$name\` | \`$dir\` | $((SECONDS - start)) s | ${execs:-?} | $result | ${new:-none} |")
  echo "fuzz: $name ($dir): $result, ${execs:-?} execs${new:+, new crashers: $new}" >&2
  [[ "$result" == ok ]] || tail -n 20 "$logs/$name.log" >&2
done

table="$(printf '| target | package | time | execs | result | new crashers |\n| --- | --- | --- | --- | --- | --- |\n'; printf '%s\n' "${rows[@]}")"
printf '%s\n' "$table"
if [[ -n "$report" ]]; then
  {
    echo "# Fuzzing run"
    echo
    echo "\`bench/fuzz/run.sh -t $fuzztime\` at commit \`$commit\`$dirty, $(date -u +%Y-%m-%d), on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg)); $(go version | cut -d' ' -f3)."
    echo "\"execs\" is the last count \`go test -fuzz\` printed (inputs tried, seeds included)."
    echo
    printf '%s\n' "$table"
  } >"$report"
fi
exit $((failed > 0))
