#!/usr/bin/env bash
# Throughput of infill's grading against the human-eval-infilling reference
# harness, back to back on the same machine, the same samples and the same
# number of workers (2), one run each:
#
#   canonical  the 1,033 single-line tasks' canonical middles (all pass);
#   mutated    the project's 2,066 mutated single-line completions
#              (evaluator/testdata/humaneval_single_line_mutated.jsonl.gz,
#              made by mutate_humaneval.py; a few, 6 to 8 per run, loop to the limit).
#
# The reference runs with its own command line (evaluate_functional_
# correctness, --n_workers=2 --timeout=3.0) from a scratch copy of
# ../shared/reference/human-eval-infilling whose data/ links to
# ../shared/data/human-eval-infilling under the names it expects; infill runs
# `infill eval grade --local --workers 2` (every sample in a fresh bubblewrap
# process tree and tmpfs, the reference's guard applied, 3 s limit). Each
# run's verdicts are compared line by line, and its wall time taken; when
# run as root with a cgroup-v1 cpuacct hierarchy, its CPU time (all
# processes, sandboxes included) too. The machine is shared: the load
# average is given with each run.
#
# Usage: bench/humaneval/bench.sh [--limit N] [REPORT]   (default bench/humaneval/BENCH.md)
#   --limit N  only the first N single-line tasks (both harnesses read a copy
#              of the set cut to them, the mutated samples of those tasks
#              only): a run of seconds, the test suite's check that the
#              benchmark works (bench/humaneval/smoke_test.go)
# Needs: Go, bubblewrap, bc, Debian's python3-numpy python3-tqdm python3-fire.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
limit=0
if [[ "${1:-}" == --limit ]]; then
  limit="${2:?--limit needs a number of tasks}"
  shift 2
fi
report="${1:-$root/bench/humaneval/BENCH.md}"
shared="$root/../shared"
data="$shared/data/human-eval-infilling"
python=/usr/bin/python3
workers=2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go build -o "$work/infill" ./clients/cmd/infill

if ((limit > 0)); then
  # A data directory like the shared one whose single-line set holds the
  # first $limit tasks (the other sets linked as they are).
  mkdir "$work/data"
  for f in "$data"/*.jsonl.gz; do ln -s "$f" "$work/data/"; done
  rm "$work/data/HumanEval-SingleLineInfilling.jsonl.gz"
  "$python" - "$data/HumanEval-SingleLineInfilling.jsonl.gz" "$work/data/HumanEval-SingleLineInfilling.jsonl.gz" "$limit" <<'EOF'
import gzip, sys
with gzip.open(sys.argv[1], "rt") as f, gzip.open(sys.argv[2], "wt") as out:
    for i, line in enumerate(f):
        if i >= int(sys.argv[3]):
            break
        out.write(line)
EOF
  data="$work/data"
fi

# The reference harness, unmodified, reading the shared data.
cp -r "$shared/reference/human-eval-infilling" "$work/ref"
chmod -R u+w "$work/ref"
mkdir "$work/ref/data"
ln -s "$data/HumanEval-SingleLineInfilling.jsonl.gz" "$work/ref/data/"

"$python" - "$data/HumanEval-SingleLineInfilling.jsonl.gz" "$work/canonical.jsonl" <<'EOF'
import gzip, json, sys
with gzip.open(sys.argv[1], "rt") as f, open(sys.argv[2], "w") as out:
    for line in f:
        t = json.loads(line)
        out.write(json.dumps({"task_id": t["task_id"], "completion": t["canonical_solution"]}) + "\n")
EOF
zcat evaluator/testdata/humaneval_single_line_mutated.jsonl.gz > "$work/mutated.jsonl"
if ((limit > 0)); then # the mutated samples of the tasks kept
  "$python" - "$data/HumanEval-SingleLineInfilling.jsonl.gz" "$work/mutated.jsonl" <<'EOF'
import gzip, json, sys
keep = {json.loads(l)["task_id"] for l in gzip.open(sys.argv[1], "rt")}
lines = [l for l in open(sys.argv[2]) if json.loads(l)["task_id"] in keep]
open(sys.argv[2], "w").writelines(lines)
EOF
fi

cpuacct=""
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/cpuacct ]; then
  cpuacct="/sys/fs/cgroup/cpuacct/infill-bench-$$"
  mkdir -p "$cpuacct"
  trap 'rm -rf "$work"; rmdir "$cpuacct" 2>/dev/null || true' EXIT
fi

# timed NAME CMD...: runs CMD (in the cpuacct group when there is one) and
# sets $wall, $cpu and $load.
timed() {
  local name=$1 start end
  shift
  load="$(cut -d' ' -f1 /proc/loadavg)"
  [ -n "$cpuacct" ] && echo 0 > "$cpuacct/cpuacct.usage"
  start=$(date +%s.%N)
  if [ -n "$cpuacct" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cpuacct" "$@" > "$work/$name.log" 2>&1 ||
      { cat "$work/$name.log"; exit 1; }
  else
    "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  fi
  end=$(date +%s.%N)
  wall=$(echo "$end - $start" | bc)
  cpu="-"
  [ -n "$cpuacct" ] && cpu=$(echo "scale=1; $(cat "$cpuacct/cpuacct.usage") / 1000000000" | bc)
  load="$load → $(cut -d' ' -f1 /proc/loadavg)"
}

rows=""
for set in canonical mutated; do
  n=$(grep -c . "$work/$set.jsonl")
  ( cd "$work/ref" && timed "ref-$set" "$python" -m human_eval_infilling.evaluate_functional_correctness \
      single-line "$work/$set.jsonl" --k='"1"' --n_workers=$workers --timeout=3.0
    echo "$wall $cpu $load" > "$work/ref-$set.time" )
  read -r ref_wall ref_cpu ref_load < "$work/ref-$set.time"
  mv "$work/$set.jsonl_results.jsonl" "$work/ref-$set.results.jsonl"
  timed "infill-$set" "$work/infill" eval grade --local --workers $workers --humaneval-dir "$data" \
    --reference-format -o "$work/infill-$set.journal.jsonl" "$work/$set.jsonl"
  inf_wall=$wall inf_cpu=$cpu inf_load=$load
  parity=$("$python" - "$work/ref-$set.results.jsonl" "$work/$set.jsonl_results.jsonl" "$work/differ.md" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b)
passed = sum(x["passed"] for x in a)
verdicts = sum(x["passed"] != y["passed"] for x, y in zip(a, b))
texts = sum(x["result"] != y["result"] for x, y in zip(a, b))
timeouts = sum(x["result"] == "timed out" for x in a)
print("%d passed, %d timed out (reference); %d verdicts differ, %d result texts differ" % (passed, timeouts, verdicts, texts))
with open(sys.argv[3], "a") as notes:
    for x, y in zip(a, b):
        if x["result"] != y["result"]:
            notes.write("- %s: reference `%s`, infill `%s`\n" % (x["task_id"], x["result"], y["result"]))
EOF
)
  rows+=$(printf '| %s | %d | %.1f s | %.1f | %s | %s | %.1f s | %.1f | %s | %s | **%.2f×** | %s |' \
    "$set" "$n" "$ref_wall" "$(echo "$n / $ref_wall" | bc -l)" "$ref_cpu" "$ref_load" \
    "$inf_wall" "$(echo "$n / $inf_wall" | bc -l)" "$inf_cpu" "$inf_load" "$(echo "$ref_wall / $inf_wall" | bc -l)" "$parity")$'\n'
done

commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/humaneval/BENCH.md' || echo '+changes')"
{
  echo "# infill eval grade vs the human-eval-infilling reference harness"
  echo
  cmdline="bench/humaneval/bench.sh"
  ((limit > 0)) && cmdline+=" --limit $limit"
  echo "Made by \`$cmdline\` at commit $commit on $(date -u +%Y-%m-%d) ($(nproc) CPUs, $(uname -r),"
  echo "$($python --version), $(bwrap --version)). Both run $workers workers with a 3 s limit, one run each,"
  echo "back to back; the reference first. CPU is all processes of the run (cpuacct), sandboxes included."
  echo
  echo "| set | samples | reference wall | reference samples/s | reference CPU s | load | infill wall | infill samples/s | infill CPU s | load | speed-up | verdicts |"
  echo "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |"
  printf '%s' "$rows"
  if [ -s "$work/differ.md" ]; then
    echo
    echo "Samples whose result differs (a limit reached at a different moment on a loaded machine shows here):"
    echo
    cat "$work/differ.md"
  fi
} > "$report"
cat "$report"
