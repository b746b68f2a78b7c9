#!/usr/bin/python3
"""Reference for evaluator's HumanEval empty-completion check.

Runs every HumanEval infilling program with an EMPTY middle directly under
Debian's /usr/bin/python3 (no sandbox: the programs are the benchmark's own
trusted code) and prints the task_ids whose program exits 0 within the
timeout. evaluator/testdata/humaneval_empty_passes.txt is this script's
output; TestHumanEvalCanonicalAndEmpty requires the sandboxed verdicts to
match it exactly.

Usage: /usr/bin/python3 bench/humaneval/humaneval_empty_reference.py ../shared/data/human-eval-infilling
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

FILES = [
    "HumanEval-SingleLineInfilling.jsonl.gz",
    "HumanEval-MultiLineInfilling.jsonl.gz",
    "HumanEval-RandomSpanInfilling.jsonl.gz",
    "HumanEval-RandomSpanInfillingLight.jsonl.gz",
]


def passes(task):
    program = task["prompt"] + "" + task["suffix"] + "\n" + task["test"] + "\n" + "check(" + task["entry_point"] + ")"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "program.py")
        with open(path, "w") as f:
            f.write(program)
        try:
            r = subprocess.run(["/usr/bin/python3", path], cwd=d, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=2)
        except subprocess.TimeoutExpired:
            return False
    return r.returncode == 0


def main():
    tasks = []
    for name in FILES:
        with gzip.open(os.path.join(sys.argv[1], name)) as f:
            tasks.extend(json.loads(line) for line in f if line.strip())
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(passes, tasks))
    for task, ok in zip(tasks, results):
        if ok:
            print(task["task_id"])


if __name__ == "__main__":
    main()
