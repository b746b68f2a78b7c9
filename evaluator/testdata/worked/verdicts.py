#!/usr/bin/env python3
# verdicts.py OUTDIR > FILE.jsonl: one line per graded sample, sorted:
# repository, run (ref: reference middles, empty: empty middles), task id,
# sample, verdict, tests passed, reason.
import json, sys, os, glob
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(out, '*.results.jsonl'))):
    repo, run = os.path.basename(f).split('.')[:2]
    for line in open(f):
        r = json.loads(line)
        t = r.get('tests') or {}
        rows.append({'repo': repo, 'run': run, 'id': r['task_id'], 'sample': r['sample'],
                     'verdict': r['verdict'], 'passed': t.get('passed'), 'reason': r.get('reason', '')})
rows.sort(key=lambda r: (r['repo'], r['run'], r['id'], r['sample']))
for r in rows:
    print(json.dumps(r, ensure_ascii=False))
