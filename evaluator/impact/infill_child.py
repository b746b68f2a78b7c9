"""sitecustomize of infill's test-impact trace runs (package evaluator/impact).

Installed as sitecustomize.py in the plugin's directory, which is first on
PYTHONPATH, so every Python process a test starts runs it. In a child of the
traced pytest (INFILL_IMPACT_CHILDREN set by the plugin) it records the lines
under INFILL_IMPACT_ROOT the process executes, for the test named by
INFILL_IMPACT_TEST when it started: first a marker file, and at exit the
lines. A child that leaves no lines (os._exit, a signal) makes its test
selected for every span. Then the next sitecustomize on sys.path runs, as it
would have without this one.
"""

import os
import sys


def _start(children, root):
    import atexit
    import json
    import threading

    test = os.environ.get("INFILL_IMPACT_TEST", "")
    base = os.path.join(children, "%d-%s" % (os.getpid(), os.urandom(8).hex()))
    with open(base + ".start", "w", encoding="utf-8") as f:
        json.dump({"test": test}, f)
    seen = set()
    keep = {}

    def rel(filename):
        r = keep.get(filename, 0)
        if r == 0:
            r = None
            if filename.endswith(".py") and not filename.startswith("<"):
                p = os.path.realpath(os.path.join(os.getcwd(), filename))
                q = os.path.relpath(p, root)
                parts = q.split(os.sep)
                if parts[0] != ".." and not any(
                    x.startswith(".") or x in ("site-packages", "dist-packages", "__pycache__") for x in parts
                ):
                    r = q.replace(os.sep, "/")
            keep[filename] = r
        return r

    def line(frame, event, arg):
        if event == "line":
            seen.add((frame.f_code.co_filename, frame.f_lineno))
        return line

    def call(frame, event, arg):
        return line if rel(frame.f_code.co_filename) is not None else None

    def dump():
        sys.settrace(None)
        threading.settrace(None)
        lines = sorted({(rel(f), l) for f, l in seen if rel(f) is not None})
        with open(base + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"test": test, "lines": lines}, f)
        os.replace(base + ".tmp", base + ".lines")

    atexit.register(dump)
    threading.settrace(call)
    sys.settrace(call)


def _chain():
    """Runs the sitecustomize this one hides, if there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in sys.path:
        if not d or os.path.abspath(d) == here:
            continue
        p = os.path.join(d, "sitecustomize.py")
        if os.path.isfile(p):
            with open(p, "rb") as f:
                code = compile(f.read(), p, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": p})
            return


_infill_impact_start = _start  # for children forked from the traced pytest

_children = os.environ.get("INFILL_IMPACT_CHILDREN")
_root = os.environ.get("INFILL_IMPACT_ROOT")
if _children and _root and os.path.isdir(_children):
    try:
        _start(_children, _root)
    except OSError:
        pass  # no marker written: nothing claimed
_chain()
