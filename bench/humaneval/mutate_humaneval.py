#!/usr/bin/python3
"""Makes infill's mutated HumanEval single-line sample set.

For each of the 1,033 single-line infilling tasks, two completions derived
from the canonical middle by deterministic text mutations: an operator,
comparison, constant or boolean changed, an index or slice shifted, a
name misspelt, the line replaced by `pass` or `return None`, the line kept
after a call the reference harness's reliability guard disables (os.kill of
the parent, exit, subprocess.Popen, os.system, shutil.rmtree, ...), or the
line kept unchanged with different spacing. Some mutants still pass (the
tests miss them), most fail, a few loop. Lines that drive a loop (while
conditions, counters) get no operator mutation, and lines in a while loop's
body only mutations that cannot stall it, so that timeouts stay rare: each
costs the full 3 s limit in any harness.

The set is graded by evaluator's reference-parity test against the
reference harness and measured by bench/humaneval/bench.sh. Output: JSON
lines {"task_id", "completion", "mutation"}, gzip-compressed.

Usage:
  /usr/bin/python3 bench/humaneval/mutate_humaneval.py \
      ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
      evaluator/testdata/humaneval_single_line_mutated.jsonl.gz
"""
import gzip
import hashlib
import json
import re
import sys

# (name, pattern, replacement): the first that matches a line applies.
OPERATORS = [
    ("eq-to-ne", r" == ", " != "),
    ("ne-to-eq", r" != ", " == "),
    ("le-to-lt", r" <= ", " < "),
    ("ge-to-gt", r" >= ", " > "),
    ("lt-to-le", r" < ", " <= "),
    ("gt-to-ge", r" > ", " >= "),
    ("and-to-or", r" and ", " or "),
    ("or-to-and", r" or ", " and "),
    ("add-to-sub", r" \+ ", " - "),
    ("sub-to-add", r" - ", " + "),
    ("mul-to-add", r" \* ", " + "),
    ("floordiv-to-div", r" // ", " / "),
    ("mod-to-floordiv", r" % ", " // "),
    ("true-to-false", r"\bTrue\b", "False"),
    ("false-to-true", r"\bFalse\b", "True"),
    ("index-shift", r"\[0\]", "[1]"),
    ("last-index-shift", r"\[-1\]", "[-2]"),
    ("slice-shift", r"\[1:\]", "[2:]"),
    ("int-plus-one", r"(?<![\w.])([0-9]+)(?![\w.])", lambda m: str(int(m.group(1)) + 1)),
    ("drop-not", r"\bnot ", ""),
    ("min-to-max", r"\bmin\(", "max("),
    ("max-to-min", r"\bmax\(", "min("),
    ("sorted-reverse", r"\bsorted\(([^()]*)\)", r"sorted(\1, reverse=True)"),
]

# Calls the reference harness's reliability guard replaces by None, put
# before the canonical line: the reference fails these programs, and so
# must infill.
GUARDED = [
    ("guard-kill-parent", "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"),
    ("guard-exit", "exit(0)"),
    ("guard-popen", "import subprocess; subprocess.Popen(['true'])"),
    ("guard-system", "import os; os.system('true')"),
    ("guard-rmtree", "import shutil; shutil.rmtree('/nonexistent-infill-probe')"),
    ("guard-getcwd", "import os; os.getcwd()"),
    ("guard-resource", "import resource"),
    ("guard-putenv", "import os; os.putenv('INFILL_PROBE', '1')"),
]

LOOP_DRIVERS = re.compile(r"^\s*while\b|\+= *1\b|-= *1\b|\bi *= *i *[+-]|\bn *= *n *[/+-]|//= ")


def digest(*parts):
    return int(hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8], 16)


def indentation(line):
    return line[: len(line) - len(line.lstrip())]


def operator_mutants(line):
    if LOOP_DRIVERS.search(line):
        return []
    out = []
    for name, pattern, repl in OPERATORS:
        mutated, n = re.subn(pattern, repl, line, count=1)
        if n and mutated != line:
            out.append((name, mutated))
    return out


def other_mutants(line, task_id):
    ind = indentation(line)
    body = line.strip()
    out = []
    if body.startswith("return "):
        out.append(("return-none", ind + "return None\n"))
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)", body)
    keywords = {"return", "if", "for", "while", "else", "elif", "def", "try", "except", "with", "import",
                "from", "pass", "break", "continue", "raise", "assert", "lambda", "not", "in", "is", "yield"}
    if m and m.group(1) not in keywords:
        out.append(("misspelt-name", ind + body.replace(m.group(1), m.group(1) + "_x", 1) + "\n"))
    if not body.endswith(":"):
        out.append(("pass", ind + "pass\n"))
        kind, call = GUARDED[digest(task_id, "guard") % len(GUARDED)]
        out.append((kind, ind + call + "\n" + line))
        out.append(("respaced", ind + re.sub(r"\s*,\s*", ", ", body) + "  \n"))
    return out


def in_while_loop(prompt, line):
    """Whether line, following prompt, is a while loop's header or lies in
    its body (an enclosing block, found by indentation, is a while)."""
    if line.lstrip().startswith("while"):
        return True
    width = len(indentation(line))
    for prev in reversed(prompt.splitlines()):
        if not prev.strip() or prev.lstrip().startswith("#"):
            continue
        w = len(indentation(prev))
        if w < width:
            if prev.lstrip().startswith("while"):
                return True
            width = w
    return False


# Mutations that cannot stall a loop: an undefined name or a disabled call
# raises, and different spacing changes nothing.
LOOP_SAFE = ("misspelt-name", "respaced") + tuple(name for name, _ in GUARDED)


def mutate(task):
    line = task["canonical_solution"]
    if not line.endswith("\n"):
        line += "\n"
    ops = operator_mutants(line)
    others = other_mutants(line, task["task_id"])
    if in_while_loop(task["prompt"], line):
        ops = []
        others = [m for m in others if m[0] in LOOP_SAFE]
    picks = []
    if ops:
        picks.append(ops[digest(task["task_id"], "op") % len(ops)])
    if others:
        picks.append(others[digest(task["task_id"], "other") % len(others)])
    pool = ops + others
    while len(picks) < 2 and pool:
        cand = pool[digest(task["task_id"], str(len(picks))) % len(pool)]
        pool.remove(cand)
        if cand not in picks:
            picks.append(cand)
    fillers = [("empty", ""), ("block-skipped", indentation(line) + "if False:\n")]
    if in_while_loop(task["prompt"], line):
        # The true line, or it with a comment after it.
        fillers = [("canonical", line), ("commented", line.rstrip("\n") + "  # infill mutant\n")]
    for filler in fillers:
        if len(picks) < 2 and filler not in picks:
            picks.append(filler)
    return picks[:2]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with gzip.open(src, "rt") as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    lines = []
    for task in tasks:
        for name, completion in mutate(task):
            lines.append(json.dumps({"task_id": task["task_id"], "completion": completion, "mutation": name}))
    # mtime=0: the same input makes the same bytes.
    with open(dst, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode())
    print("%d completions for %d tasks -> %s" % (len(lines), len(tasks), dst))


if __name__ == "__main__":
    main()
