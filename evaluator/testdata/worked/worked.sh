#!/bin/bash
# usage: worked.sh BINDIR OUTDIR   (repositories under /tmp/runner, see README.md)
set -u
BIN=$1; OUT=$2; mkdir -p $OUT; cd ${WORK:-/tmp/runner}
export GOMODCACHE=/var/cache/go-mod
mkdir -p $GOMODCACHE; chmod 755 $GOMODCACHE
run() { echo "+ $*" >>$OUT/commands.txt; local t0=$(date +%s); "$@" >>$OUT/log.txt 2>&1; local rc=$?; echo "  rc=$rc $(( $(date +%s)-t0 ))s load: $(cut -d' ' -f1-3 /proc/loadavg)" >>$OUT/commands.txt; }
for R in ${REPOS:-pysemver gosemver neverthrow tinyjs}; do
  case $R in
    pysemver) MASK="--levels expression,statement,function,single-line --per-level 2 --seed 7";;
    gosemver) MASK="--per-level 2 --seed 1";;
    neverthrow) MASK="--per-level 1 --max-middle 16000 --seed 1";;
    tinyjs) MASK="--per-level 2 --seed 1 --node-select-tests";;
  esac
  echo "=== $R" >>$OUT/log.txt
  run $BIN/infill eval mask $MASK $R -o $OUT/$R.bench.jsonl
  run $BIN/infill eval run --reference --local --workers 2 --infill $OUT/$R.bench.jsonl -o $OUT/$R.ref.results.jsonl
  python3 -c "import json,sys; [print(json.dumps({'task_id': json.loads(l)['id'], 'completion': ''})) for l in open(sys.argv[1])]" $OUT/$R.bench.jsonl > $OUT/$R.empty.jsonl
  run $BIN/infill eval grade --local --workers 2 --k 1 --infill $OUT/$R.bench.jsonl $OUT/$R.empty.jsonl -o $OUT/$R.empty.results.jsonl
done
echo done >>$OUT/commands.txt
