#!/usr/bin/env python3
"""Read cpquality's per-prompt manifests (-manifests FILE) and print, as
markdown, the evidence behind issue 30's causes that the report's own
tables do not give:

1. where fused loses identifiers that the ExecRepoBench-style context finds:
   which of fused's candidates held them (a resolved import or a definition
   it dropped, another part of a file it showed) or whether fused never
   considered the file;
2. the per-file cap's drops of import and definition candidates, per
   repository and budget;
3. for TypeScript/JavaScript cursor files whose imports of the repository's
   own code resolved to nothing, the import specifiers they hold;
4. documentation (Markdown) windows in fused's context.

Files are read from REPOS/<repository name> (the -dir repositories of
bench/contextpack/quality.sh); samples of repositories not found there
(the built-in ones) are left out of (1) and (3).

Usage: bench/contextpack/causes.py [--repos DIR] MANIFESTS.jsonl.gz...
"""

import argparse
import collections
import gzip
import os
import re
import sys

WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]+")
JS_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"\s]+)['"]""")


def load(paths):
    """Yields the JSON lines of the manifests."""
    import json
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


class Files:
    """Reads repository files once, as sets of words."""

    def __init__(self, root):
        self.root = root
        self.cache = {}

    def has(self, repo):
        return os.path.isdir(os.path.join(self.root, repo))

    def text(self, repo, path):
        key = (repo, path)
        if key not in self.cache:
            try:
                with open(os.path.join(self.root, repo, path), encoding="utf-8") as f:
                    t = f.read()
            except (OSError, UnicodeDecodeError):
                t = ""
            self.cache[key] = (t, set(WORD.findall(t)))
        return self.cache[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "repos"))
    ap.add_argument("manifests", nargs="+")
    a = ap.parse_args()
    files = Files(a.repos)

    # Group a sample's prompts: key -> {(strategy, budget): line}.
    samples = collections.defaultdict(dict)
    for d in load(a.manifests):
        if d["strategy"] not in ("fused", "execrepobench"):
            continue
        key = (d["repo"], d["path"], d.get("sample", d["start"]), d["end"])
        samples[key][(d["strategy"], d["budget"])] = {
            "lang": d["lang"], "code_found": d["code_found"], "imports": d["imports"],
            "resolved": d["scores"]["ResolvedImports"],
            "sources": [{"path": s["path"], "kind": s["kind"], "included": s["included"],
                         "cap": "(cap)" in s["reason"]} for s in d.get("sources") or []]}
    budgets = sorted({b for s in samples.values() for (_, b) in s})

    # 1. Identifiers execrepobench finds and fused does not.
    why = collections.defaultdict(collections.Counter)  # (lang, budget) -> reason -> count
    won = collections.Counter()
    for (repo, path, _, _), prompts in samples.items():
        if not files.has(repo):
            continue
        for b in budgets:
            f, e = prompts.get(("fused", b)), prompts.get(("execrepobench", b))
            if not f or not e:
                continue
            lang = f["lang"]
            lost = set(e["code_found"]) - set(f["code_found"])
            won[(lang, b)] += len(set(f["code_found"]) - set(e["code_found"]))
            if not lost:
                continue
            e_files = [s["path"] for s in e["sources"] if s["included"] and s["path"] != path]
            f_incl = {s["path"] for s in f["sources"] if s["included"]}
            f_imp_dropped = {s["path"] for s in f["sources"] if s["kind"] == "import" and not s["included"]}
            f_def_dropped = {s["path"] for s in f["sources"] if s["kind"] == "definition" and not s["included"]}
            for ident in lost:
                holders = [p for p in e_files if ident in files.text(repo, p)[1]]
                if not holders:
                    reason = "not found in the baseline's files by word (cut line)"
                elif any(p in f_imp_dropped for p in holders):
                    reason = "a resolved import fused dropped"
                elif any(p in f_def_dropped for p in holders):
                    reason = "a definition candidate fused dropped"
                elif any(p in f_incl for p in holders):
                    reason = "another part of a file fused showed"
                else:
                    reason = "a file fused did not consider as import or definition"
                why[(lang, b)][reason] += 1

    print("## Where fused loses identifiers the ExecRepoBench-style context finds\n")
    print("Needed code identifiers the baseline's context showed as code and fused's did not, by where the "
          "baseline had them (-dir repositories only); 'fused gains' counts the reverse.\n")
    reasons = ["a resolved import fused dropped", "a definition candidate fused dropped",
               "another part of a file fused showed", "a file fused did not consider as import or definition",
               "not found in the baseline's files by word (cut line)"]
    print("| language | budget | fused loses | " + " | ".join(reasons) + " | fused gains |")
    print("|" + " --- |" * (len(reasons) + 4))
    for (lang, b) in sorted(why, key=lambda k: (k[0], k[1])):
        c = why[(lang, b)]
        n = sum(c.values())
        cells = [f"{c[r]} ({100 * c[r] / n:.0f}%)" if n else "0" for r in reasons]
        print(f"| {lang} | {b} | {n} | " + " | ".join(cells) + f" | {won[(lang, b)]} |")

    # 2. The per-file cap.
    print("\n## Import and definition candidates dropped by the per-file cap (fused)\n")
    print("| repository | " + " | ".join(f"{b}: imports / definitions" for b in budgets) + " | samples |")
    print("|" + " --- |" * (len(budgets) + 2))
    cap = collections.defaultdict(collections.Counter)
    nsamp = collections.Counter()
    for (repo, _, _, _), prompts in samples.items():
        nsamp[repo] += 1
        for b in budgets:
            f = prompts.get(("fused", b))
            for s in (f or {}).get("sources", []):
                if s["cap"] and s["kind"] in ("import", "definition"):
                    cap[repo][(b, s["kind"])] += 1
    for repo in sorted(nsamp):
        cells = [f"{cap[repo][(b, 'import')]} / {cap[repo][(b, 'definition')]}" for b in budgets]
        print(f"| {repo} | " + " | ".join(cells) + f" | {nsamp[repo]} |")

    # 3. Unresolved TypeScript/JavaScript imports.
    print("\n## TypeScript/JavaScript cursor files importing their repository's code with no import resolved\n")
    print("Import specifiers of those files (read from the file), by kind; bare specifiers by their first "
          "one or two path parts.\n")
    print("| repository | samples | importing own code | of those, none resolved | their relative imports "
          "(naming .js) | their bare imports (top) |")
    print("| --- | --- | --- | --- | --- | --- |")
    big = max(budgets) if budgets else 0
    per_repo = collections.defaultdict(lambda: [0, 0, 0, 0, 0, collections.Counter()])
    for (repo, path, _, _), prompts in samples.items():
        f = prompts.get(("fused", big))
        if not f or f["lang"] not in ("TypeScript", "JavaScript") or not files.has(repo):
            continue
        r = per_repo[repo]
        r[0] += 1
        if f["imports"]["own"] + f["imports"]["relative"] == 0:
            continue
        r[1] += 1
        if f["resolved"] > 0:
            continue
        r[2] += 1
        for spec in JS_IMPORT.findall(files.text(repo, path)[0]):
            if spec.startswith("."):
                r[3] += 1
                if spec.endswith(".js"):
                    r[4] += 1
            else:
                parts = spec.split("/")
                r[5]["/".join(parts[:2] if spec.startswith("@") else parts[:1])] += 1
    for repo, (n, own, none, rel, reljs, bare) in sorted(per_repo.items()):
        top = ", ".join(f"`{k}` {v}" for k, v in bare.most_common(6))
        print(f"| {repo} | {n} | {own} | {none} ({100 * none / max(1, own):.0f}%) | {rel} ({reljs}) | {top} |")

    # 4. Documentation in fused's context.
    print("\n## Markdown windows included by fused\n")
    print("| repository | " + " | ".join(f"{b}: prompts with one / windows" for b in budgets) + " |")
    print("|" + " --- |" * (len(budgets) + 1))
    md = collections.defaultdict(collections.Counter)
    for (repo, _, _, _), prompts in samples.items():
        for b in budgets:
            f = prompts.get(("fused", b))
            k = sum(1 for s in (f or {}).get("sources", []) if s["included"] and s["path"].endswith((".md", ".rst")))
            md[repo][(b, "w")] += k
            md[repo][(b, "p")] += k > 0
    for repo in sorted(md):
        if any(md[repo][(b, "w")] for b in budgets):
            print(f"| {repo} | " + " | ".join(f"{md[repo][(b, 'p')]} / {md[repo][(b, 'w')]}" for b in budgets) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
