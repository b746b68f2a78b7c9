// Package impact finds, once per repository on its pristine code, which
// tests execute which source lines (per-test coverage, import and
// collection time included), and from that map the tests that reach a span,
// so that grading a completion can run only those tests.
//
// Python (pytest) is the supported language; the evaluator's pytest
// runner selects its tests with it (other runners select in their own
// ways: node's test files, Go's package). NewPytestTrace is the run of the
// repository's suite once with an embedded pytest plugin (infill_impact.py,
// loaded with -p from a private directory on PYTHONPATH) that records, per
// test node id, the lines under the repository root it executes, using
// sys.monitoring where the interpreter has it (3.12+) and sys.settrace
// before; its Parse reads the Map. PytestReach maps a byte span onto test
// ids (SelectShaped); PytestTests turns ids into the pytest arguments,
// files and environment that run just those.
//
// Attribution rule (conservative: running the selected tests must give the
// verdict the whole suite gives for any change confined to the span):
//   - a line executed inside a test's runtest protocol (setup, call,
//     teardown) belongs to that test;
//   - a line executed while a fixture of scope class, module, package or
//     session is on the stack (its setup, or its teardown after yield)
//     belongs to every test whose fixture closure names that fixture or
//     that asks for it by name (request.getfixturevalue), since its value
//     is computed once and shared;
//   - a line executed outside every test (conftest and test-module imports,
//     collection, session start and finish), and every line of a module or
//     class body wherever it runs (a lazy import in one test fills
//     sys.modules for all of them), belongs to every test;
//   - a span in a test file or a conftest.py selects every test;
//   - a span over part of a multi-line statement is widened to the whole
//     statement (the interpreter reports some statements on one line only);
//   - Python processes a test starts record their lines for that test:
//     through a sitecustomize on the inherited PYTHONPATH when they start
//     an interpreter (subprocess, multiprocessing's spawn), from the fork on
//     when they fork; a child that ends without writing them (os._exit, as
//     multiprocessing's forked workers do, or a signal) makes its test
//     selected for every span, as does a test that replaces the tracer.
//
// SelectShaped relaxes the rule for graders that check a completion's
// shape (its file's syntax tree without function bodies: PytestShape): a
// line run at import time outside every function body then selects no
// test by itself, so that a span over a whole function selects the tests
// that run its body; a selected run whose completion changes the shape
// says so before any repository code runs (Widened), and the grader keeps
// its failure or confirms its pass with the whole suite. PytestReach
// applies it to byte spans and gives node ids relative to the repository
// root, which PytestTests runs without the map (the evaluator records them
// in a task's TestSpec.Tests). A selected run also compiles the changed
// file first (PytestConfig.Compile).
//
// What it does not see, by construction: non-Python processes running
// repository code, children started with an environment that drops
// PYTHONPATH, state one test leaves for a later one through a cache filled
// by a plain function (functools.cache, a module-level dict filled
// lazily), and tests whose outcome depends on their order.
//
// The map is only as trustworthy as the repository's tests: code under test
// sees the run's nonce and could print a forged map after the plugin's
// (from an atexit handler, say; the last one printed wins). Tests run in
// other processes (pytest-xdist) make the trace fail rather than give an
// empty map.
//
// Running untrusted repository code is the evaluator's job: the package
// never executes anything itself; the evaluator runs its runs in the
// sandbox, as any test run (the package's tests do too, through a command
// run); only the check of Python 3.12+ interpreters outside /usr runs the
// package's own test data on the host.
package impact
