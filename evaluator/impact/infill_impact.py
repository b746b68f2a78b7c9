"""pytest plugin of infill's test-impact runner (package evaluator/impact).

Loaded with ``-p infill_impact`` from a private directory on PYTHONPATH; the
run's working directory is the repository root. Two modes, chosen by the
environment:

INFILL_IMPACT_TRACE=<nonce>
    Record which lines under the repository root each test executes and write
    the map, once, to the stdout pytest started with, as one line
    ``infill-impact <nonce> <base64 of zlib of JSON>``. Lines are attributed
    to buckets:
      * the running test, from the start to the end of its runtest protocol
        (setup, call, teardown);
      * a fixture of scope other than "function", for the lines run while its
        function (or generator) is on the stack: every test whose fixture
        closure names it or that asks for it by name, since the value is
        cached and shared;
      * "every test": lines executed outside any test (import and collection,
        session start and end) and lines of module or class bodies wherever
        they run (a lazy import inside one test fills sys.modules for all).
      * the test that started a Python child process, for the lines the
        child ran (infill_child.py, installed as sitecustomize.py beside
        this file, records them); a child that leaves none selects its test
        for every span.
    sys.monitoring is used where it exists (3.12+), sys.settrace before.

INFILL_IMPACT_SELECT=<path of a JSON list of node ids>
    Keep only those items; a listed id that is not collected stops the run
    with exit status 4, so a renamed test never passes by running nothing
    (unless collection failed: then the run stops as pytest stops it, on the
    collection errors).

INFILL_IMPACT_SHAPE={"file": path, "pristine": path, "nonce": nonce}
    With INFILL_IMPACT_SELECT, when the plugin is loaded (before conftest
    files and test modules): if the changed file's shape (its syntax tree
    without function bodies) is not the pristine file's, print
    ``infill-impact-widen <nonce>`` and go on: the completion changed what
    runs at import time, so the selection does not hold; the grader keeps a
    failing verdict and runs the whole suite for a passing one.

INFILL_IMPACT_COMPILE=<JSON list of paths relative to the root>
    With INFILL_IMPACT_SELECT: compile each file before the tests run; a
    syntax error in one is reported as a collection error of that file, as
    if a test module imported it.
"""

import ast
import base64
import json
import os
import shutil
import sys
import tempfile
import threading
import zlib

import pytest

_TRACE_NONCE = os.environ.get("INFILL_IMPACT_TRACE", "")
_SELECT_PATH = os.environ.get("INFILL_IMPACT_SELECT", "")
_COMPILE = os.environ.get("INFILL_IMPACT_COMPILE", "")
_SHAPE = os.environ.get("INFILL_IMPACT_SHAPE", "")
_ROOT = os.path.realpath(os.getcwd())
_CO_NEWLOCALS = 0x2

# The real stdout, saved before pytest's capture redirects fd 1.
_OUT_FD = os.dup(1) if _TRACE_NONCE else -1

_rel_cache = {}  # co_filename -> path relative to _ROOT, or None (not traced)


def _rel(filename):
    r = _rel_cache.get(filename, 0)
    if r != 0:
        return r
    r = None
    if filename.endswith(".py") and not filename.startswith("<"):
        p = os.path.realpath(os.path.join(_ROOT, filename))
        rel = os.path.relpath(p, _ROOT)
        parts = rel.split(os.sep)
        if (
            parts[0] != ".."
            and not any(x.startswith(".") or x in ("site-packages", "dist-packages", "__pycache__") for x in parts)
            and os.path.isfile(p)
        ):
            r = rel.replace(os.sep, "/")
    _rel_cache[filename] = r
    return r


def _mark_untraced(children, root):
    """Leaves a marker and never lines: the test is selected for every span."""
    name = os.path.join(children, "%d-%s.start" % (os.getpid(), os.urandom(8).hex()))
    with open(name, "w", encoding="utf-8") as f:
        json.dump({"test": os.environ.get("INFILL_IMPACT_TEST", "")}, f)


class _Recorder:
    """Line buckets; `lines` is the bucket lines go to now."""

    def __init__(self):
        self.outside = set()  # (co_filename, line) outside any test
        self.module = set()  # lines of module and class bodies
        self.tests = {}  # nodeid -> set
        self.fixtures = {}  # fixture name -> set
        self.fixture_codes = {}  # code object -> fixture name (scope > function)
        self.lines = self.outside
        self.items = []
        self.outcomes = {}
        self.untraced = set()  # tests that replaced the tracer
        self.current = None  # node id of the test running
        self.requested = {}  # fixture name -> node ids asking for it by name

    # --- sys.settrace (before 3.12) ---
    def _trace_call(self, frame, event, arg):
        code = frame.f_code
        name = self.fixture_codes.get(code)
        if name is not None:
            return self._fixture_frame(name)
        if _rel(code.co_filename) is None:
            return None
        if not code.co_flags & _CO_NEWLOCALS:
            return self._trace_module
        return self._trace_line

    def _trace_line(self, frame, event, arg):
        if event == "line":
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._trace_line

    def _trace_module(self, frame, event, arg):
        if event == "line":
            self.module.add((frame.f_code.co_filename, frame.f_lineno))
        return self._trace_module

    def _fixture_frame(self, name):
        prev = self.lines
        self.lines = self.fixtures.setdefault(name, set())

        def local(frame, event, arg):
            if event == "line":
                self.lines.add((frame.f_code.co_filename, frame.f_lineno))
            elif event == "return":  # also on yield and on an exception leaving
                self.lines = prev
            return local

        return local

    # --- sys.monitoring (3.12+) ---
    def _monitor_start(self):
        mon = sys.monitoring
        # The coverage tool id, or another free one if a coverage tool holds it.
        for tool in (mon.COVERAGE_ID, 0, 1, 2, 3, 4):
            if mon.get_tool(tool) is None:
                break
        else:
            raise RuntimeError("infill-impact: no free sys.monitoring tool id")
        mon.use_tool_id(tool, "infill-impact")
        self._tool = tool
        self._mon_stack = []
        # PY_UNWIND (an exception leaving a frame) cannot be a local event.
        self._mon_fixture_events = mon.events.PY_START | mon.events.PY_RESUME | mon.events.PY_RETURN | mon.events.PY_YIELD
        DISABLE = mon.DISABLE

        def on_line(code, line):
            if _rel(code.co_filename) is None:
                return DISABLE
            if not code.co_flags & _CO_NEWLOCALS:
                self.module.add((code.co_filename, line))
            else:
                self.lines.add((code.co_filename, line))
            # Seen in this bucket: silence it until the bucket changes.
            return DISABLE

        def on_enter(code, offset):
            name = self.fixture_codes.get(code)
            if name is not None:
                self._mon_stack.append(self.lines)
                self._set_bucket(self.fixtures.setdefault(name, set()))

        def on_leave(code, offset, *rest):
            if code in self.fixture_codes and self._mon_stack:
                self._set_bucket(self._mon_stack.pop())

        mon.register_callback(tool, mon.events.LINE, on_line)
        for ev in (mon.events.PY_START, mon.events.PY_RESUME):
            mon.register_callback(tool, ev, on_enter)
        for ev in (mon.events.PY_RETURN, mon.events.PY_YIELD, mon.events.PY_UNWIND):
            mon.register_callback(tool, ev, on_leave)
        mon.set_events(tool, mon.events.LINE | mon.events.PY_UNWIND)

    def _watch_fixture_code(self, code):
        if hasattr(sys, "monitoring"):
            mon = sys.monitoring
            mon.set_local_events(self._tool, code, self._mon_fixture_events)

    def _set_bucket(self, bucket):
        self.lines = bucket
        if hasattr(sys, "monitoring"):
            sys.monitoring.restart_events()

    def start(self):
        self._watch_getfixturevalue()
        # Python processes the tests start record their lines too (see the
        # sitecustomize beside this file): they find it on an absolute
        # PYTHONPATH whatever their working directory.
        here = os.path.dirname(os.path.abspath(__file__))
        pp = os.environ.get("PYTHONPATH", "")
        os.environ["PYTHONPATH"] = here + (os.pathsep + pp if pp else "")
        self.children = tempfile.mkdtemp(prefix="infill-impact-")
        os.environ["INFILL_IMPACT_CHILDREN"] = self.children
        os.environ["INFILL_IMPACT_ROOT"] = _ROOT
        os.environ["INFILL_IMPACT_TEST"] = ""
        # A forked child (multiprocessing's default) runs no sitecustomize:
        # it records its lines the same way from the fork on.
        os.register_at_fork(after_in_child=self._forked)
        if hasattr(sys, "monitoring"):
            self._monitor_start()
        else:
            threading.settrace(self._trace_call)
            sys.settrace(self._trace_call)

    def _forked(self):
        child = sys.modules.get("sitecustomize")
        start = getattr(child, "_infill_impact_start", _mark_untraced)
        self.stop()
        start(self.children, _ROOT)

    def stop(self):
        if hasattr(sys, "monitoring"):
            mon = sys.monitoring
            mon.set_events(self._tool, 0)
            mon.free_tool_id(self._tool)
        else:
            sys.settrace(None)
            threading.settrace(None)

    # --- pytest hooks ---
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if fixturedef.scope != "function":
            func = getattr(fixturedef, "func", None)
            func = getattr(func, "__func__", func)  # fixtures defined in classes
            code = getattr(func, "__code__", None)
            if code is not None and code not in self.fixture_codes:
                self.fixture_codes[code] = fixturedef.argname
                self._watch_fixture_code(code)
        yield

    def _watch_getfixturevalue(self):
        """Records which test asks for which fixture by name at run time
        (request.getfixturevalue): such users are not in item.fixturenames,
        and a cached value reaches them without running the fixture."""
        orig = pytest.FixtureRequest.getfixturevalue
        recorder = self

        def getfixturevalue(request, argname):
            if recorder.current is not None:
                recorder.requested.setdefault(argname, set()).add(recorder.current)
            return orig(request, argname)

        pytest.FixtureRequest.getfixturevalue = getfixturevalue

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._set_bucket(self.tests.setdefault(item.nodeid, set()))
        self.current = item.nodeid
        os.environ["INFILL_IMPACT_TEST"] = item.nodeid
        try:
            yield
        finally:
            self.current = None
            os.environ["INFILL_IMPACT_TEST"] = ""
            self._set_bucket(self.outside)
            if not hasattr(sys, "monitoring") and sys.gettrace() != self._trace_call:
                # The test replaced the tracer (a debugger, coverage, settrace(None)):
                # what it ran is unknown, so it is selected for every span.
                self.untraced.add(item.nodeid)
                sys.settrace(self._trace_call)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.items = list(session.items)

    def pytest_runtest_logreport(self, report):
        prev = self.outcomes.get(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and prev != "failed" and report.when != "teardown":
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and prev is None:
            self.outcomes[report.nodeid] = "passed"

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        self.stop()
        untraced = [t for t in self.outcomes if t not in self.tests]
        if untraced:  # run elsewhere (pytest-xdist workers): no map rather than a wrong one
            sys.stderr.write("infill-impact: %d tests ran outside this process (e.g. %s); no map written\n" % (len(untraced), untraced[0]))
            return
        self._read_children()
        data = self._build(config)
        blob = base64.b64encode(zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6))
        for f in (sys.stdout, sys.__stdout__):
            try:
                f.flush()  # what pytest wrote must come before, not after
            except Exception:
                pass
        line = b"\ninfill-impact " + _TRACE_NONCE.encode() + b" " + blob + b"\n"
        while line:
            n = os.write(_OUT_FD, line)
            line = line[n:]

    def _read_children(self):
        """Adds the lines child processes ran to the test that started them
        (or to every test, for children started outside any test). A child
        that left a marker and no lines makes its test (or every test)
        selected for every span."""
        for name in sorted(os.listdir(self.children)):
            if not name.endswith(".start"):
                continue
            base = os.path.join(self.children, name[: -len(".start")])
            with open(base + ".start", encoding="utf-8") as f:
                test = json.load(f)["test"]
            try:
                with open(base + ".lines", encoding="utf-8") as f:
                    lines = [(rel, line) for rel, line in json.load(f)["lines"]]
            except (OSError, ValueError):
                if test:
                    self.untraced.add(test)
                else:
                    self.untraced.update(self.outcomes)
                    self.untraced.update(it.nodeid for it in self.items)
                continue
            (self.tests.setdefault(test, set()) if test else self.outside).update(lines)
        shutil.rmtree(self.children, ignore_errors=True)

    def _build(self, config):
        rootdir = os.path.relpath(os.path.realpath(str(config.rootpath)), _ROOT).replace(os.sep, "/")
        tests = [it.nodeid for it in self.items]
        index = {t: i for i, t in enumerate(tests)}
        test_files = set()
        for it in self.items:
            if isinstance(it, pytest.Function):
                rel = _rel(str(it.path))
                if rel is not None:
                    test_files.add(rel)
        users = {}  # fixture name -> test indexes
        for i, it in enumerate(self.items):
            for name in getattr(it, "fixturenames", ()):
                users.setdefault(name, set()).add(i)
        for name, nodeids in self.requested.items():
            users.setdefault(name, set()).update(index[t] for t in nodeids if t in index)

        files = {}

        def entry(rel):
            e = files.get(rel)
            if e is None:
                e = files[rel] = {"all": set(), "lines": {}}
            return e

        def add(lines, idxs):
            for filename, line in lines:
                rel = _rel(filename)
                if rel is None:
                    continue
                if os.path.basename(rel) == "conftest.py":
                    test_files.add(rel)
                if idxs is None:
                    entry(rel)["all"].add(line)
                else:
                    entry(rel)["lines"].setdefault(line, set()).update(idxs)

        add(self.outside, None)
        add(self.module, None)
        for nodeid, lines in self.tests.items():
            if nodeid in index:
                add(lines, (index[nodeid],))
            else:  # run but not collected (should not happen): conservative
                add(lines, None)
        for name, lines in self.fixtures.items():
            add(lines, users.get(name, ()))

        out = {}
        for rel, e in files.items():
            if rel in test_files:
                continue
            every = e["all"]
            extents, anchors, bodies = _statements(os.path.join(_ROOT, rel))
            out[rel] = {
                "all": sorted(every),
                "lines": {str(l): sorted(ix) for l, ix in sorted(e["lines"].items()) if l not in every and ix},
                "statements": extents,
                "anchors": anchors,
                "bodies": bodies,
            }
        return {
            "version": 2,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "tracer": "sys.monitoring" if hasattr(sys, "monitoring") else "sys.settrace",
            "rootdir": rootdir,
            "tests": tests,
            "outcomes": [self.outcomes.get(t, "not run") for t in tests],
            "always": [i for i, t in enumerate(tests) if t in self.untraced],
            "test_files": sorted(test_files),
            "files": out,
        }


def _first_line(node):
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _no_code(node):
    """Statements the compiler emits no code for, so no line event either."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or isinstance(
        node, (ast.Global, ast.Nonlocal)
    )


def _statements(path):
    """Returns, for the file at path, the line extents [first, last] of
    statements spanning several lines (of a compound statement: its header),
    so that a span over any of their lines finds the lines the interpreter
    reports for them; and anchors [first, last, line] of statements that
    have no code (docstrings, other constant expressions, global): code a
    completion puts there runs when control reaches them, that is, when the
    next statement of their block with code starts (else the one before
    completes, else their block's header runs), and line is where that
    shows. Also the extents [first, last] of function bodies: what lies
    outside them is the file's shape (_shape)."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return [], [], []
    extents, anchors, bodies = [], [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            bodies.append([_first_line(node.body[0]), node.body[-1].end_lineno or node.body[-1].lineno])
        if isinstance(node, ast.stmt):
            first = _first_line(node)
            body = getattr(node, "body", None)
            if isinstance(body, list) and body:
                last = _first_line(body[0]) - 1
            else:
                last = node.end_lineno or node.lineno
            if last > first:
                extents.append([first, last])
        header = _first_line(node) if hasattr(node, "lineno") else None  # None: the module
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, st in enumerate(block):
                if not isinstance(st, ast.stmt) or not _no_code(st):
                    continue
                after = [b for b in block[i + 1 :] if not _no_code(b)]
                before = [b for b in block[:i] if not _no_code(b)]
                if after:
                    line = _first_line(after[0])
                elif before:
                    line = _first_line(before[-1])
                elif header is not None:
                    line = header
                else:
                    line = 0  # a module of constants only: its import
                anchors.append([st.lineno, st.end_lineno or st.lineno, line])
    extents.sort()
    anchors.sort()
    bodies.sort()
    return extents, anchors, bodies


def _shape(src, name):
    """The file's shape: its syntax tree with every function's body left
    out (no line numbers). Two files of one shape differ only in code that
    runs when a function is called."""
    tree = ast.parse(src, name)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []
    return ast.dump(tree)


def _check_shape(spec):
    """INFILL_IMPACT_SHAPE: when the changed file's shape is not the
    pristine file's, the selection does not hold; say so with the run's
    nonce, before anything of the repository runs, and go on: the grader
    keeps a failing verdict (the whole suite holds the failing tests) and
    runs the whole suite for a passing one."""
    try:
        with open(os.path.join(_ROOT, spec["file"]), "rb") as f:
            changed = f.read()
        with open(os.path.join(_ROOT, spec["pristine"]), "rb") as f:
            pristine = f.read()
        same = _shape(changed, spec["file"]) == _shape(pristine, spec["file"])
    except (SyntaxError, ValueError):
        return  # the compile check reports it
    if not same:
        os.write(1, ("\ninfill-impact-widen %s\n" % spec["nonce"]).encode())


class _Selector:
    def __init__(self, ids, compile_paths):
        self.ids = ids
        self.compile_paths = compile_paths

    def _compile(self, config):
        from _pytest.reports import CollectReport

        for rel in self.compile_paths:
            try:
                with open(os.path.join(_ROOT, rel), "rb") as f:
                    compile(f.read(), rel, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte, before 3.12
                import traceback

                text = "".join(traceback.format_exception_only(type(exc), exc))
                rep = CollectReport(rel, "failed", "%s: %s" % (rel, text.rstrip()), [])
                config.hook.pytest_collectreport(report=rep)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        self._compile(config)
        want = set(self.ids)
        keep, drop = [], []
        for it in items:
            (keep if it.nodeid in want else drop).append(it)
        missing = want - {it.nodeid for it in keep}
        if missing and not session.testsfailed:
            pytest.exit("infill-impact: selected tests not collected: %s" % ", ".join(sorted(missing)[:5]), returncode=4)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_configure(config):
    if _TRACE_NONCE:
        config.pluginmanager.register(_recorder, "infill-impact-recorder")
    if _SELECT_PATH:
        with open(_SELECT_PATH, encoding="utf-8") as f:
            ids = json.load(f)
        config.pluginmanager.register(_Selector(ids, json.loads(_COMPILE) if _COMPILE else []), "infill-impact-selector")


if _SELECT_PATH and _SHAPE:
    _check_shape(json.loads(_SHAPE))

_recorder = None
if _TRACE_NONCE:
    _recorder = _Recorder()
    _recorder.start()  # before conftest files and test modules are imported
