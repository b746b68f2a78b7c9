// infill's test-impact probe for node (eval mask): run after one test file
// ran on the pristine repository under NODE_V8_COVERAGE=DIR, it reads the
// V8 coverage every process of that run wrote to DIR and prints, on one
// line "INFILL-IMPACT i j ...", the indices of the spans in SPANS (defined
// above this text: [{file, start, end}], byte offsets) that code of the run
// executed. A point is executed when the innermost coverage range holding
// it counted at least once; a span is reached when any point in it is
// (its start, or a range boundary inside it). Module-level code that runs
// at import counts like any other.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath } = require('node:url');

const dir = process.argv[2];
const cwd = process.cwd();
// file -> [ranges of one script instance]
const scripts = new Map();
for (const name of fs.readdirSync(dir)) {
  let cov;
  try {
    cov = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
  } catch {
    continue;
  }
  for (const s of cov.result ?? []) {
    if (!s.url || !s.url.startsWith('file://')) continue;
    const file = path.relative(cwd, fileURLToPath(s.url));
    if (file.startsWith('..') || path.isAbsolute(file)) continue;
    const ranges = s.functions.flatMap((fn) => fn.ranges);
    if (!scripts.has(file)) scripts.set(file, []);
    scripts.get(file).push(ranges);
  }
}

// utf16 turns a byte offset of src (a Buffer) into V8's offset in its
// string (UTF-16 code units).
const utf16 = (src, off) => src.subarray(0, off).toString('utf8').length;

function countAt(ranges, p) {
  let best = null;
  for (const r of ranges) {
    if (r.startOffset <= p && p < r.endOffset && (best === null || r.endOffset - r.startOffset < best.endOffset - best.startOffset)) best = r;
  }
  return best === null ? 0 : best.count;
}

const reached = [];
SPANS.forEach((sp, i) => {
  const instances = scripts.get(sp.file);
  if (!instances) return;
  const src = fs.readFileSync(path.join(cwd, sp.file));
  const a = utf16(src, sp.start);
  const b = Math.max(a + 1, utf16(src, sp.end));
  for (const ranges of instances) {
    const points = [a];
    for (const r of ranges) {
      if (r.startOffset > a && r.startOffset < b) points.push(r.startOffset);
      if (r.endOffset > a && r.endOffset < b) points.push(r.endOffset);
    }
    if (points.some((p) => countAt(ranges, p) > 0)) {
      reached.push(i);
      return;
    }
  }
});
console.log('INFILL-IMPACT ' + reached.join(' '));
