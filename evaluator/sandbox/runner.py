# infill sandbox runner. Trusted wrapper executed by Debian's python3 inside the
# bubblewrap sandbox; it runs untrusted code and reports a positive pass signal.
#
# Protocol (see sandbox.go):
#   stdin  : one line holding the per-run nonce; read here, before any untrusted
#            code runs, after which stdin is re-opened on /dev/null.
#   fd 3   : status pipe. "START\n" once the runner is up, and, only when the
#            test code returned normally, "PASS <nonce> <json>\n" as the very
#            last action before os._exit(0).
# Modes:
#   program FILE         exec FILE as __main__ (HumanEval program); any
#                        exception, including SystemExit, is a failure.
#   script FILE ARGS...  run FILE as __main__ via runpy (like `python FILE`);
#                        SystemExit(0 or None) counts as normal completion.
#   pytest ARGS...       pytest.main(ARGS) in this process, counting outcomes.
import json
import os
import sys


def _read_nonce():
    data = b""
    while b"\n" not in data and len(data) < 512:
        chunk = os.read(0, 512)
        if not chunk:
            break
        data += chunk
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    return data.split(b"\n", 1)[0].strip()


def _status(line):
    try:
        os.write(3, line)
    except OSError:
        pass


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _fail(code):
    _flush()
    os._exit(code if isinstance(code, int) and 0 < code < 256 else 1)


def _pass(nonce, info):
    _flush()
    _status(b"PASS " + nonce + b" " + json.dumps(info).encode() + b"\n")
    os._exit(0)


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


class _Counter:
    """pytest plugin counting test outcomes."""

    def __init__(self):
        self.passed = self.failed = self.errors = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            if report.passed:
                self.passed += 1
            elif report.failed:
                self.failed += 1
            else:
                self.skipped += 1
        elif report.failed:
            self.errors += 1
        elif report.skipped:
            self.skipped += 1

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors += 1


def main():
    nonce = _read_nonce()
    _status(b"START\n")
    if len(sys.argv) < 2 or not nonce:
        sys.stderr.write("infill runner: bad invocation\n")
        _fail(2)
    mode, args = sys.argv[1], sys.argv[2:]
    import traceback

    if mode == "program":
        path = args[0]
        sys.argv = [path]
        sys.path[0] = os.path.dirname(os.path.abspath(path))
        with open(path, encoding="utf-8") as f:
            source = f.read()
        env = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
        try:
            exec(compile(source, path, "exec"), env)
        except BaseException:
            traceback.print_exc()
            _fail(1)
        del env
        _pass(nonce, {})
    elif mode == "script":
        import runpy

        path = args[0]
        sys.argv = list(args)
        sys.path[0] = os.path.dirname(os.path.abspath(path))
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = _exit_code(exc)
            if code != 0:
                _fail(code)
        except BaseException:
            traceback.print_exc()
            _fail(1)
        _pass(nonce, {})
    elif mode == "pytest":
        sys.argv = ["pytest"] + list(args)
        sys.path[0] = os.getcwd()
        try:
            import pytest
        except ImportError:
            sys.stderr.write("infill runner: pytest is not installed (Debian package python3-pytest)\n")
            _fail(2)
        counter = _Counter()
        try:
            code = pytest.main(list(args), plugins=[counter])
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:
            traceback.print_exc()
            _fail(1)
        code = int(code)
        if code != 0:
            _fail(code)
        _pass(nonce, {"passed": counter.passed, "failed": counter.failed,
                      "errors": counter.errors, "skipped": counter.skipped})
    else:
        sys.stderr.write("infill runner: unknown mode %r\n" % mode)
        _fail(2)


main()
