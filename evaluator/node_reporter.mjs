// infill's reporter for node's built-in test runner (node --test). It runs
// in the test runner's own process; the test files run in child processes
// of it, which see neither the nonce nor the status descriptor. It reads
// the run's nonce from stdin, says START on the status descriptor (fd 3)
// before any test runs, counts the tests that passed, failed and were
// skipped (leaves only: a describe() suite or a test with subtests is not
// counted, its subtests are), remembers the first failure, and at the end
// reports PASS with the counts and FAIL with the first failure, each
// carrying the nonce. The verdict is judged from the counts by infill.
import { readFileSync, writeSync } from 'node:fs';
import { relative } from 'node:path';

const nonce = readFileSync(0, 'utf8').trim();
const status = (line) => writeSync(3, line + '\n');
// stripAnsi drops terminal colours some tools put in their messages
// whatever NO_COLOR says.
const stripAnsi = (s) => String(s).replace(/\x1b\[[0-9;]*m/g, '');
status('START');

// failureOf words a failed test as infill's Failure: the test, the
// exception's first line and where it was raised (the first stack frame in
// the working directory outside node_modules).
export function failureOf(data, cwd) {
  let err = data.details && data.details.error;
  if (err && err.failureType === 'testCodeFailure' && err.cause !== undefined) err = err.cause;
  let message = '';
  let stack = '';
  if (err instanceof Error || (err && typeof err === 'object')) {
    message = String(err.message ?? '');
    const name = err.code && String(err.name).indexOf(err.code) < 0 ? `${err.name} [${err.code}]` : String(err.name ?? 'Error');
    message = `${name}: ${stripAnsi(message)}`;
    stack = String(err.stack ?? '');
  } else if (err !== undefined) {
    message = String(err);
  }
  const crash = { path: '', line: 0, message };
  for (const m of stack.matchAll(/\(?(?:file:\/\/)?(\/[^():\s]+):(\d+):\d+\)?/g)) {
    if (m[1].includes('/node_modules/') || m[1].startsWith('/run/infill/') || !m[1].startsWith(cwd + '/')) continue;
    crash.path = relative(cwd, m[1]);
    crash.line = Number(m[2]);
    break;
  }
  // A message whose first line only announces what follows ("Transform
  // failed with 1 error:") keeps its second line.
  const lines = message.split('\n');
  const next = lines.slice(1).find((l) => l.trim() !== '');
  if (next && lines[0].trimEnd().endsWith(':')) crash.message = `${lines[0]} ${next.trim()}`;
  let test = data.name;
  if (data.file) test = data.name === data.file ? relative(cwd, data.file) : `${relative(cwd, data.file)}::${data.name}`;
  return { test, when: 'call', crash, report: stack || message };
}

// fileFailure completes the failure of a test file that failed as a whole
// (its error is only "test failed") from what the file wrote to stderr:
// the last line naming an error, and the first stack frame under the
// working directory.
function fileFailure(f, stderr) {
  if (!stderr || !/^'?test failed'?$|^Error: test failed$|: test failed$/.test(f.crash.message)) return f;
  const lines = stderr.split('\n');
  const at = lines.findLastIndex((l) => /^\w*(Error|Exception)\b.*:|^\[\w*(Error|Exception)\b/.test(l.trim()));
  let errLine = at >= 0 ? lines[at].trim() : (lines.find((l) => l.trim() !== '') ?? '').trim();
  if (at >= 0 && errLine.endsWith(':') && at + 1 < lines.length) errLine += ' ' + lines[at + 1].trim();
  const g = failureOf({ name: f.test, details: { error: { message: '', name: '', stack: stderr } } }, process.cwd());
  const crash = { path: g.crash.path, line: g.crash.line, message: errLine };
  // A syntax error names its place first, as "FILE:LINE" on a line alone.
  const cwd = process.cwd();
  const place = lines.map((l) => /^(?:file:\/\/)?(\/\S+):(\d+)$/.exec(l.trim())).find((m) => m && m[1].startsWith(cwd + '/') && !m[1].includes('/node_modules/'));
  if (place) {
    crash.path = relative(cwd, place[1]);
    crash.line = Number(place[2]);
  }
  return { ...f, crash, report: stderr };
}

export default async function* infillReporter(source) {
  const counts = { passed: 0, failed: 0, errors: 0, skipped: 0 };
  // seen[file][d] is set when an event at nesting d came since the last
  // event at nesting d-1: that later event is then a suite.
  const seen = new Map();
  let first = null;
  const cwd = process.cwd();
  // stderr of each test file: a file that cannot be loaded fails as a
  // whole with "test failed"; what it printed says why.
  const stderr = new Map();
  for await (const ev of source) {
    if (ev.type === 'test:stderr' && ev.data.file) {
      const s = (stderr.get(ev.data.file) ?? '') + ev.data.message;
      stderr.set(ev.data.file, s.slice(-4096));
      continue;
    }
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data;
    const key = d.file ?? '';
    if (!seen.has(key)) seen.set(key, []);
    const levels = seen.get(key);
    const parent = levels[d.nesting + 1] === true;
    levels[d.nesting + 1] = false;
    levels[d.nesting] = true;
    const failed = ev.type === 'test:fail';
    if (parent) {
      // A suite fails because a subtest failed (counted there) or on its
      // own (a hook, an error outside its tests): the latter is an error.
      const ft = d.details && d.details.error && d.details.error.failureType;
      if (failed && ft !== 'subtestsFailed') {
        counts.errors++;
        first ??= failureOf(d, cwd);
      }
      continue;
    }
    if (failed && !d.todo) {
      counts.failed++;
      first ??= fileFailure(failureOf(d, cwd), stderr.get(d.file));
    } else if (d.skip || d.todo) {
      counts.skipped++;
    } else {
      counts.passed++;
    }
  }
  if (first) status(`FAIL ${nonce} ${JSON.stringify(first)}`);
  status(`PASS ${nonce} ${JSON.stringify(counts)}`);
}
