// infill's reporter for vitest (vitest run --reporter=<this file>). It
// runs in vitest's main process; it reads the run's nonce from stdin, says
// START on the status descriptor (fd 3), and when the run ends reports the
// tests that passed, failed and were skipped (PASS with the counts), the
// first failure (FAIL), each with the nonce. Errors outside any test (a
// test file that cannot be imported, an unhandled rejection) count as
// errors. It speaks both reporter interfaces: onTestRunEnd (vitest 3 and
// later) and onFinished (vitest 1 and 2), and reports once.
import { readFileSync, writeSync } from 'node:fs';
import { relative } from 'node:path';

const nonce = readFileSync(0, 'utf8').trim();
const status = (line) => writeSync(3, line + '\n');
// stripAnsi drops terminal colours some tools put in their messages
// whatever NO_COLOR says.
const stripAnsi = (s) => String(s).replace(/\x1b\[[0-9;]*m/g, '');
status('START');

function crashOf(err, cwd) {
  const crash = { path: '', line: 0, message: '' };
  if (!err) return crash;
  crash.message = `${err.name ?? 'Error'}: ${stripAnsi(err.message ?? '')}`;
  // A message whose first line only announces what follows keeps its
  // second line ("Transform failed with 1 error:" and esbuild's error).
  const lines = crash.message.split('\n');
  const next = lines.slice(1).find((l) => l.trim() !== '');
  if (next && lines[0].trimEnd().endsWith(':')) crash.message = `${lines[0]} ${next.trim()}`;
  for (const m of String(err.stack ?? err.stackStr ?? '').matchAll(/\(?(?:file:\/\/)?(\/[^():\s]+):(\d+):\d+\)?/g)) {
    if (m[1].includes('/node_modules/') || !m[1].startsWith(cwd + '/')) continue;
    crash.path = relative(cwd, m[1]);
    crash.line = Number(m[2]);
    break;
  }
  return crash;
}

export default class InfillReporter {
  constructor() {
    this.done = false;
    this.cwd = process.cwd();
  }

  report(counts, first) {
    if (this.done) return;
    this.done = true;
    if (first) status(`FAIL ${nonce} ${JSON.stringify(first)}`);
    status(`PASS ${nonce} ${JSON.stringify(counts)}`);
  }

  failure(file, name, err) {
    return { test: `${relative(this.cwd, file)}::${name}`, when: 'call', crash: crashOf(err, this.cwd), report: String(err?.stack ?? err?.message ?? '') };
  }

  // vitest 3 and later.
  onTestRunEnd(modules, unhandled) {
    const counts = { passed: 0, failed: 0, errors: (unhandled ?? []).length, skipped: 0 };
    let first = null;
    for (const m of modules) {
      const merrs = typeof m.errors === 'function' ? m.errors() : [];
      if (merrs.length > 0) {
        counts.errors += merrs.length;
        first ??= this.failure(m.moduleId, '(module)', merrs[0]);
      }
      for (const t of m.children.allTests()) {
        const r = t.result();
        switch (r.state) {
          case 'passed': counts.passed++; break;
          case 'failed':
            counts.failed++;
            first ??= this.failure(m.moduleId, t.fullName, (r.errors ?? [])[0]);
            break;
          default: counts.skipped++;
        }
      }
    }
    if (!first && (unhandled ?? []).length > 0) first = this.failure(this.cwd + '/-', '(unhandled error)', unhandled[0]);
    this.report(counts, first);
  }

  // vitest 1 and 2 (vitest 3 calls onTestRunEnd as well, which reported).
  onFinished(files, errors) {
    if (this.done) return;
    const counts = { passed: 0, failed: 0, errors: (errors ?? []).length, skipped: 0 };
    let first = null;
    const walk = (file, task, prefix) => {
      if (Array.isArray(task.tasks)) {
        const name = task.type === 'suite' && task.filepath === undefined ? [prefix, task.name].filter(Boolean).join(' > ') : '';
        const errs = task.result?.errors ?? [];
        if (task.result?.state === 'fail' && errs.length > 0) {
          counts.errors++;
          first ??= this.failure(file, name || '(module)', errs[0]);
        }
        for (const c of task.tasks) walk(file, c, name);
        return;
      }
      const name = [prefix, task.name].filter(Boolean).join(' > ');
      const st = task.result?.state;
      if (task.mode === 'skip' || task.mode === 'todo' || st === 'skip' || st === 'todo') counts.skipped++;
      else if (st === 'pass') counts.passed++;
      else {
        counts.failed++;
        first ??= this.failure(file, name, (task.result?.errors ?? [])[0]);
      }
    };
    for (const f of files ?? []) walk(f.filepath ?? f.name, f, '');
    if (!first && (errors ?? []).length > 0) first = this.failure(this.cwd + '/-', '(unhandled error)', errors[0]);
    this.report(counts, first);
  }
}
