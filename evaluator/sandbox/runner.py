# infill sandbox runner. Trusted wrapper executed by Debian's python3 inside the
# bubblewrap sandbox; it runs untrusted code and reports a positive pass signal.
#
# Cold protocol, one run per sandbox (see sandbox.go):
#   stdin  : one line holding the per-run nonce; read here, before any untrusted
#            code runs, after which stdin is re-opened on /dev/null.
#   fd 3   : status pipe. "START\n" just before untrusted code runs (the run's
#            own clock starts there), "EXC <nonce> <json>\n" when the test code
#            raised, "ENV <nonce> <json>\n" when the environment, not the code
#            under test, failed (no pytest, no entry point), "FAIL <nonce>
#            <json>\n" with the first failing pytest test (its id, phase,
#            crash location and report), and, only when the test code
#            returned normally, "PASS <nonce> <json>\n" as the very last
#            action before os._exit(0).
# Modes:
#   program FILE         exec FILE as __main__; any exception, including
#                        SystemExit, is a failure.
#   humaneval FILE       run FILE's text as the human-eval-infilling harness
#                        runs a check program: its reliability guard first,
#                        then exec in a fresh, empty globals dict, stdin
#                        unreadable; any exception is a failure.
#   script FILE ARGS...  run FILE as __main__ via runpy (like `python FILE`);
#                        SystemExit(0 or None) counts as normal completion.
#   pytest ARGS...       pytest.main(ARGS) in this process, counting outcomes.
#
# Warm protocol (serve mode, warm.go): "serve TMPFS_BYTES WORK_BYTES". This
# process stays up inside one sandbox and prepares, one ahead, the process
# that will run the next sample: in a fresh PID, mount and IPC namespace of
# its own with fresh tmpfs /work, /tmp and /dev/shm, so that nothing of a
# sample outlives it. fd 3 is a Unix stream socket to the host (control).
#   runner -> host, control: {"ready": true}, then {"door": SEQ} per prepared
#                   sample with one end of a socket pair attached (its door).
#   host -> runner, control: b"K" + 4-byte big-endian length + SEQ: kill that
#                   sample's namespace.
#   host -> door:   b"R" + 4-byte length + JSON request, with the sample's
#                   stdout, stderr and status pipes attached (SCM_RIGHTS).
#   door -> host:   one JSON line: {"status": W} with the raw wait status of
#                   the sample's process, or {"error": "..."}; EOF without it
#                   when the sample was killed.
# Process chain per sample: this server forks G into a new PID namespace,
# whose PID 1 it is; G unshares mount and IPC namespaces, mounts the tmpfs
# and its /proc, starts a session, drops every capability and forks H, which
# waits on the door, writes the files and runs the sample exactly as the cold
# modes do. When H ends G reports its wait status on the door and exits, and
# the kernel kills whatever else is left in the namespace.
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


def _env_error(nonce, message, code=2):
    """The environment failed (not the code under test): no verdict."""
    try:
        sys.stderr.write("infill runner: " + message + "\n")
    except Exception:
        pass
    _status(b"ENV " + nonce + b" " + json.dumps({"message": message}).encode() + b"\n")
    _fail(code)


def _where(exc):
    """file:line where exc was raised: a SyntaxError's own location, else
    the innermost frame of its traceback."""
    try:
        if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
            return "%s:%d" % (exc.filename, exc.lineno)
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            return "%s:%d" % (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    except BaseException:
        pass
    return ""


def _exception(nonce, exc):
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable %s>" % type(exc).__name__
    info = {"type": type(exc).__name__, "message": message, "where": _where(exc)}
    _status(b"EXC " + nonce + b" " + json.dumps(info).encode() + b"\n")


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


# What the human-eval-infilling harness disables before it runs a check
# program (its reliability_guard, called without a memory limit), listed here
# so that a completion calling one of them gets the verdict it gets there: the
# attribute is replaced by None, so calling it raises TypeError.
_GUARDED_OS = (
    "kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
    "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
    "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
    "lchflags", "lchmod", "lchown", "getcwd", "chdir",
)
_GUARDED_SHUTIL = ("rmtree", "move", "chown")
_GUARDED_BUILTINS = ("exit", "quit", "help")
# Importing these afterwards raises ImportError (sys.modules entry None).
_BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")


def guard():
    import builtins
    import faulthandler
    import shutil
    import subprocess

    faulthandler.disable()
    for name in _GUARDED_BUILTINS:
        setattr(builtins, name, None)
    # Set through os.environ before os.putenv goes, as the harness does.
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in _GUARDED_OS:
        setattr(os, name, None)
    for name in _GUARDED_SHUTIL:
        setattr(shutil, name, None)
    subprocess.Popen = None
    for name in _BLOCKED_MODULES:
        sys.modules[name] = None


class _NoInput:
    """stdin of a HumanEval program: reading raises OSError, as under the
    reference harness, whose stdin is a write-only buffer."""

    def read(self, *args, **kwargs):
        raise OSError

    readline = readlines = read

    def readable(self):
        return False

    def __iter__(self):
        raise OSError

    def close(self):
        pass

    closed = False
    encoding = "utf-8"


def run_program(nonce, path):
    import traceback

    sys.argv = [path]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        source = f.read()
    env = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    _status(b"START\n")
    try:
        exec(compile(source, path, "exec"), env)
    except BaseException as exc:
        _exception(nonce, exc)
        traceback.print_exc()
        _fail(1)
    del env
    _pass(nonce, {})


def run_humaneval(nonce, path):
    import traceback

    sys.argv = [path]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        source = f.read()
    guard()
    sys.stdin = _NoInput()
    _status(b"START\n")
    try:
        # As the harness: the text compiled as "<string>" (so messages name
        # it the same way) into an empty globals dict.
        exec(source, {})
    except BaseException as exc:
        _exception(nonce, exc)
        traceback.print_exc()
        _fail(1)
    _pass(nonce, {})


def run_script(nonce, args):
    import runpy
    import traceback

    path = args[0]
    if not os.path.isfile(path):
        _env_error(nonce, "test entry point %s is missing" % path)
    sys.argv = list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    _status(b"START\n")
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
        if code != 0:
            _fail(code)
    except BaseException as exc:
        _exception(nonce, exc)
        traceback.print_exc()
        _fail(1)
    _pass(nonce, {})


class _Counter:
    """pytest plugin counting test outcomes and keeping the first failure."""

    def __init__(self):
        self.passed = self.failed = self.errors = self.skipped = 0
        self.first = None

    def _keep(self, report, when):
        if self.first is not None:
            return
        try:
            info = {"test": report.nodeid, "when": when}
            crash = getattr(report.longrepr, "reprcrash", None)
            if crash is not None:
                info["crash"] = {"path": str(crash.path), "line": int(crash.lineno),
                                 "message": str(crash.message)}
            info["report"] = report.longreprtext[-6000:]
            out = "".join("--- %s ---\n%s" % (title, text) for title, text in report.sections
                          if not title.startswith("Captured log"))
            if out:
                info["output"] = out[-3000:]
            self.first = info
        except BaseException:
            self.first = {"test": getattr(report, "nodeid", ""), "when": when}

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            if report.passed:
                self.passed += 1
            elif report.failed:
                self.failed += 1
                self._keep(report, "call")
            else:
                self.skipped += 1
        elif report.failed:
            self.errors += 1
            self._keep(report, report.when)
        elif report.skipped:
            self.skipped += 1

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors += 1
            self._keep(report, "collect")


# pytest's own exit codes that say the environment, not the code under
# test, is wrong: usage error, no tests collected.
_PYTEST_ENV_CODES = {4: "pytest usage error (exit 4)", 5: "pytest collected no tests (exit 5)"}


def run_pytest(nonce, args):
    import traceback

    sys.argv = ["pytest"] + list(args)
    sys.path[0] = os.getcwd()
    try:
        import pytest
    except ImportError:
        if sys.prefix != sys.base_prefix:
            _env_error(nonce, "pytest is not installed in the virtual environment %s: install it there, "
                       "or make the venv with --system-site-packages to use the system's pytest" % sys.prefix, 127)
        _env_error(nonce, "pytest is not installed for %s (Debian package python3-pytest)" % sys.executable, 127)
    counter = _Counter()
    _status(b"START\n")
    try:
        code = pytest.main(list(args), plugins=[counter])
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _exception(nonce, exc)
        traceback.print_exc()
        _fail(1)
    code = int(code)
    if counter.first is not None:
        _status(b"FAIL " + nonce + b" " + json.dumps(counter.first).encode() + b"\n")
    if code in _PYTEST_ENV_CODES:
        _env_error(nonce, _PYTEST_ENV_CODES[code], code)
    if code != 0:
        _fail(code)
    _pass(nonce, {"passed": counter.passed, "failed": counter.failed,
                  "errors": counter.errors, "skipped": counter.skipped})


def run(nonce, mode, args):
    if mode == "program":
        run_program(nonce, args[0])
    elif mode == "humaneval":
        run_humaneval(nonce, args[0])
    elif mode == "script":
        run_script(nonce, args)
    elif mode == "pytest":
        run_pytest(nonce, args)
    sys.stderr.write("infill runner: unknown mode %r\n" % mode)
    _fail(2)


# ---------------------------------------------------------------- warm mode

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}


class _Kernel:
    """The few system calls Python 3.11 does not wrap, through ctypes."""

    def __init__(self):
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.capset_nr = SYS_CAPSET.get(os.uname().machine)
        if self.capset_nr is None:
            raise OSError("capset: unknown system call number on %s" % os.uname().machine)
        with open("/proc/sys/kernel/cap_last_cap") as f:
            self.last_cap = int(f.read())

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                        ("inheritable", ctypes.c_uint32)]

        # _LINUX_CAPABILITY_VERSION_3, and two empty sets (64 capabilities).
        self.cap_header, self.cap_data = Header(0x20080522, 0), (Data * 2)()
        self.own_pid_ns = None

    def enter_own_pid_ns(self):
        """Moves the serving runner into a PID namespace of its own, as its
        PID 1. bubblewrap's PID namespace belongs to the user namespace
        outside the one --disable-userns nests, where this process has no
        capability; a namespace made here belongs to this one, so that
        reset_pid_ns may return to it after each sample's."""
        self.unshare(CLONE_NEWPID)
        pid = os.fork()
        if pid:
            _, st = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(st) & 0xFF)
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def _check(self, rc, what):
        if rc != 0:
            err = self.ctypes.get_errno()
            raise OSError(err, "%s: %s" % (what, os.strerror(err)))

    def unshare(self, flags):
        self._check(self.libc.unshare(flags), "unshare")

    def reset_pid_ns(self):
        """Make later children join this process's own PID namespace again,
        so that the next unshare(CLONE_NEWPID) is allowed."""
        self._check(self.libc.setns(self.own_pid_ns, CLONE_NEWPID), "setns")

    def mount(self, source, target, fstype, flags, data):
        enc = lambda s: s.encode() if s is not None else None
        self._check(self.libc.mount(enc(source), enc(target), enc(fstype),
                                    self.ctypes.c_ulong(flags), enc(data)), "mount " + target)

    def prctl(self, option, arg):
        c = self.ctypes.c_ulong
        self._check(self.libc.prctl(option, c(arg), c(0), c(0), c(0)), "prctl %d" % option)

    def drop_capabilities(self):
        """Empty the bounding, ambient, inheritable, permitted and effective
        sets and forbid gaining privileges again."""
        for cap in range(self.last_cap + 1):
            self.prctl(PR_CAPBSET_DROP, cap)
        self.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        ref = self.ctypes.byref
        self._check(self.libc.syscall(self.capset_nr, ref(self.cap_header), ref(self.cap_data)), "capset")
        self.prctl(PR_SET_NO_NEW_PRIVS, 1)


def _write_files(files):
    for name, content in files.items():
        d = os.path.dirname(name)
        if d:
            os.makedirs(d, exist_ok=True)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(content)


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _recv_message(sock):
    """One host message: kind byte, 4-byte length, payload; with the fds
    attached to its first byte."""
    import socket

    head, fds, _, _ = socket.recv_fds(sock, 5, 3)
    if not head:
        raise EOFError
    head += _recv_exact(sock, 5 - len(head))
    size = int.from_bytes(head[1:5], "big")
    return head[:1], _recv_exact(sock, size) if size else b"", fds


def _sample_h(door, taken_w):
    """H: waits on its door for a sample, then runs it as a cold run's
    runner runs it."""
    import resource
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        kind, payload, fds = _recv_message(door)
    except EOFError:
        os._exit(0)  # the host let the door go unused
    os.write(taken_w, b"T")
    if kind != b"R" or len(fds) != 3:
        door.sendall(json.dumps({"error": "bad sample request"}).encode() + b"\n")
        os._exit(73)
    try:
        req = json.loads(payload)
        os.makedirs(req["cwd"], exist_ok=True)
        os.chdir(req["cwd"])
        _write_files(req["files"])
        for name, value in req["rlimits"].items():
            resource.setrlimit(getattr(resource, name), tuple(value))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for target, fd in zip((1, 2, 3), fds):
            os.dup2(fd, target)
        os.environ.clear()
        os.environ.update(req["env"])
        _KERNEL.prctl(PR_SET_DUMPABLE, 1)
    except BaseException as exc:
        door.sendall(json.dumps({"error": "setting up the sample: %r" % exc}).encode() + b"\n")
        os._exit(74)
    # Nothing of the runner's stays open: not the door, not the notices.
    os.closerange(4, 1 << 16)
    run(req["nonce"].encode(), req["mode"], req["args"])


def _sample_g(door, taken_w, sizes):
    """G: PID 1 of a sample's PID namespace. It makes the sample's mount and
    IPC namespaces, mounts fresh tmpfs and its /proc, drops every
    capability, starts H, and when H ends writes H's wait status to the
    door and exits, which ends every process left in the namespace."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _KERNEL.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()
    _KERNEL.unshare(CLONE_NEWNS | CLONE_NEWIPC)
    _KERNEL.mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    for d in ("/tmp", "/dev/shm"):
        _KERNEL.mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=1777" % sizes["tmpfs"])
    _KERNEL.mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=0755" % sizes["work"])
    _KERNEL.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _KERNEL.drop_capabilities()
    os.chdir("/work")
    h = os.fork()
    if h == 0:
        try:
            _sample_h(door, taken_w)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(70)
    os.close(taken_w)
    while True:
        pid, st = os.waitpid(-1, 0)
        if pid == h:
            break
    try:
        door.sendall(json.dumps({"status": st}).encode() + b"\n")
    except OSError:
        pass
    os._exit(0)


class _Prepared:
    """A sample's namespace made ahead of its request: G's pid, a pidfd
    that becomes readable when G ends, and the pipe on which H says that
    its request came."""

    def __init__(self, seq, gpid, taken_r):
        self.seq, self.gpid, self.taken_r = seq, gpid, taken_r
        self.pidfd = os.pidfd_open(gpid)
        self.taken = False


def _prepare(seq, ctrl, sizes):
    """Forks G into a new PID namespace with a door (a socket pair) whose
    host end goes to the host with {"door": seq}."""
    import socket

    door_host, door_sample = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    taken_r, taken_w = os.pipe()
    _KERNEL.unshare(CLONE_NEWPID)
    try:
        g = os.fork()
    except BaseException:
        _KERNEL.reset_pid_ns()
        raise
    if g == 0:
        try:
            ctrl.close()
            door_host.close()
            os.close(taken_r)
            _sample_g(door_sample, taken_w, sizes)
        except BaseException as exc:
            try:
                door_sample.sendall(json.dumps({"error": str(exc)}).encode() + b"\n")
            except BaseException:
                pass
        finally:
            os._exit(71)
    _KERNEL.reset_pid_ns()
    door_sample.close()
    os.close(taken_w)
    socket.send_fds(ctrl, [json.dumps({"door": seq}).encode() + b"\n"], [door_host.fileno()])
    door_host.close()
    return _Prepared(seq, g, taken_r)


def serve(sizes):
    """The warm runner: keeps one sample namespace prepared ahead, hands
    its door to the host, and kills a sample when the host says so. A
    sample's request and its status go over its door, so this process is
    not on a sample's path at all."""
    import select
    import signal
    import socket

    global _KERNEL
    _KERNEL = _Kernel()
    _KERNEL.enter_own_pid_ns()
    # Modules HumanEval programs import, and what the runner itself imports
    # when it runs a sample, loaded once here so that each sample's fresh
    # process (a fork of this one) has them already, as the reference
    # harness's forked workers have what it imported.
    import collections, functools, hashlib, heapq, itertools, math, re, string, typing  # noqa: F401
    import faulthandler, resource, runpy, shutil, subprocess, traceback  # noqa: F401

    _KERNEL.prctl(PR_SET_DUMPABLE, 0)
    ctrl = socket.socket(fileno=3)
    ctrl.sendall(b'{"ready": true}\n')
    live = {}  # fd (taken_r or pidfd) -> _Prepared, namespaces not yet ended
    seq = 0
    poll = select.poll()
    poll.register(ctrl.fileno(), select.POLLIN)

    def prepare():
        nonlocal seq
        seq += 1
        p = _prepare(seq, ctrl, sizes)
        for fd in (p.taken_r, p.pidfd):
            live[fd] = p
            poll.register(fd, select.POLLIN)

    prepare()
    while True:
        for fd, _ in poll.poll():
            if fd == ctrl.fileno():
                try:
                    kind, payload, extra = _recv_message(ctrl)
                except EOFError:
                    for p in live.values():
                        os.kill(p.gpid, signal.SIGKILL)
                    os._exit(0)
                for x in extra:
                    os.close(x)
                if kind == b"K":
                    target = int(payload or b"0")
                    for p in set(live.values()):
                        if p.seq == target:
                            os.kill(p.gpid, signal.SIGKILL)
                continue
            p = live.get(fd)
            if p is None:
                continue
            if fd == p.taken_r:
                if os.read(fd, 1) and not p.taken:
                    # Its sample started: make the next one ready meanwhile.
                    p.taken = True
                    prepare()
                    continue
                poll.unregister(fd)  # H closed it: nothing more to read
                del live[fd]
                os.close(fd)
                continue
            # G ended, and with it the namespace.
            os.waitpid(p.gpid, 0)
            for x in (p.taken_r, p.pidfd):
                # Only its own: a closed fd's number may be another's now.
                if live.get(x) is p:
                    del live[x]
                    poll.unregister(x)
                    os.close(x)
            if not p.taken:
                prepare()  # it died unused: the host holds a dead door


_KERNEL = None


def main():
    if sys.argv[1:2] == ["serve"]:
        serve({"tmpfs": int(sys.argv[2]), "work": int(sys.argv[3])})
        return
    nonce = _read_nonce()
    if len(sys.argv) < 2 or not nonce or sys.argv[1] != "pytest" and len(sys.argv) < 3:
        sys.stderr.write("infill runner: bad invocation\n")
        _fail(2)
    if sys.argv[1] not in ("program", "humaneval", "script", "pytest"):
        sys.stderr.write("infill runner: unknown mode %r\n" % sys.argv[1])
        _fail(2)
    run(nonce, sys.argv[1], sys.argv[2:])


main()
