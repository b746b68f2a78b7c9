#!/usr/bin/python3
"""Calls the human-eval-infilling reference harness for infill's parity tests.

The reference harness (../shared/reference/human-eval-infilling, see
../shared/reference/README.md) is imported from its directory, never copied;
this script only calls its functions. Needs Debian's python3-numpy and
python3-tqdm (imported by the harness).

  verdicts REFERENCE PROBLEMS SAMPLES [--workers N] [--timeout S]
      Grades every line of SAMPLES ({"task_id", "completion"}) with the
      harness's own check_correctness (its reliability guard, its
      multiprocessing worker, its time limit), on N threads as its
      evaluate_functional_correctness does, and prints one JSON line per
      sample in file order: task_id, completion_id (the sample's number
      among its task's lines), passed, result. Unlike the harness's command
      line it does not require every problem of the set to be attempted.

  read REFERENCE RESULTS [--k 1,10]
      Reads a results file (FILE_results.jsonl) with the harness's own
      reader (stream_jsonl) and prints one JSON object: the lines' task_id,
      passed and result, and pass@k for each k every task has samples for,
      from the harness's estimate_pass_at_k.
"""
import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor


def reference(path):
    sys.path.insert(0, path)
    from human_eval_infilling import data, evaluation, execution

    return data, evaluation, execution


def verdicts(args):
    data, _, execution = reference(args.reference)
    problems = {p["task_id"]: p for p in data.stream_jsonl(args.problems)}
    ids = Counter()
    futures = []
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for sample in data.stream_jsonl(args.samples):
            task_id = sample["task_id"]
            futures.append(pool.submit(execution.check_correctness, problems[task_id], sample["completion"],
                                       args.timeout, ids[task_id]))
            ids[task_id] += 1
        for f in futures:
            r = f.result()
            print(json.dumps({"task_id": r["task_id"], "completion_id": r["completion_id"],
                              "passed": r["passed"], "result": r["result"]}))


def read(args):
    data, evaluation, _ = reference(args.reference)
    lines = list(data.stream_jsonl(args.results))
    total, correct = Counter(), Counter()
    for line in lines:
        total[line["task_id"]] += 1
        correct[line["task_id"]] += bool(line["passed"])
    tasks = list(total)
    n = [total[t] for t in tasks]
    c = [correct[t] for t in tasks]
    pass_at_k = {}
    for k in (int(x) for x in args.k.split(",")):
        if all(x >= k for x in n):
            pass_at_k["pass@%d" % k] = float(evaluation.estimate_pass_at_k(n, c, k).mean())
    print(json.dumps({
        "lines": [{"task_id": x["task_id"], "passed": x["passed"], "result": x["result"]} for x in lines],
        "pass_at_k": pass_at_k,
    }))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verdicts")
    v.add_argument("reference")
    v.add_argument("problems")
    v.add_argument("samples")
    v.add_argument("--workers", type=int, default=2)
    v.add_argument("--timeout", type=float, default=3.0)
    r = sub.add_parser("read")
    r.add_argument("reference")
    r.add_argument("results")
    r.add_argument("--k", default="1,10,100")
    args = p.parse_args()
    {"verdicts": verdicts, "read": read}[args.cmd](args)


if __name__ == "__main__":
    main()
