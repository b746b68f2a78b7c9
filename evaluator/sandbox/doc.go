// Package sandbox owns the isolated execution of untrusted code for the
// evaluator: every run gets a private writable copy of its repository or
// program inside a bubblewrap sandbox (new user, PID, network, mount, IPC and
// UTS namespaces, non-root uid without capabilities, no nested user
// namespaces, read-only /usr and root, minimal /etc, private sized tmpfs /tmp
// and /dev/shm), rlimits applied with prlimit(1) inside the namespace (CPU
// time, address space, processes, file size, open files, no core dumps), a
// wall-clock timeout that kills the whole namespace (bwrap leads its own
// process group; its death takes the namespace's init and so every
// descendant, setsid daemons included), capped output capture with a kill on
// floods, and a positive pass signal.
//
// Pass signal: a trusted runner (runner.py, embedded) reads a per-run random
// nonce from stdin before any untrusted code runs, re-opens stdin on
// /dev/null, executes the test code, and only when that returned normally
// writes "PASS <nonce>" to fd 3 as its last act. Exit status 0 without it
// (os._exit(0), exec of another program, a killed runner, SystemExit in a
// program) fails. Limits of the design, stated plainly: the test code and the
// code under test share one interpreter, so code written specifically to
// forge the signal (walking the runner's frames or the heap for the nonce) is
// not stopped by it — it is still contained by the sandbox.
//
// Resource bounds, without cgroups (they are not available unprivileged
// everywhere): the memory limit is RLIMIT_DATA, the memory a process may
// write to (heap, private anonymous mappings, thread stacks as they are
// made). Unlike RLIMIT_AS it does not count address space reserved and
// never written — glibc's 64 MiB malloc arena per thread, the heaps V8 and
// Go reserve — so an ordinary threaded test suite fits (measured: 32
// threads of a Python test reserve 1.3 GB of address space and write
// 270 MB). RLIMIT_AS stays, at 4 × the memory limit by default, as the
// backstop for what RLIMIT_DATA does not count (shared anonymous mappings).
// Threads count against RLIMIT_NPROC (Processes). Both are per process, so
// the aggregate is bounded by Processes × AddressSpaceBytes plus the tmpfs
// sizes. When the caller is root the sandbox is started as Config.UID
// outside too, because the kernel exempts root from RLIMIT_NPROC. The
// private copy lives under Config.TempDir; RLIMIT_FSIZE bounds each file
// written there, the wall clock bounds the rest. A run that did not pass
// because of a limit says which (Result.Limit, detectLimit) and its value.
//
// Environments (environment.go): a run may use another interpreter than
// Config.PythonPath — a repository's virtual environment, or any Python
// installation — given as an Environment: the venv and the installation
// it was made from (when outside /usr) are bound read-only, a venv inside
// the repository where it lies in the private copy (not copied), and the
// private copy is shown at the repository's own host path too, so that
// an editable install of the repository imports the copy with the
// completion. PythonEnvironment works this out from the files alone;
// nothing of the repository's is run on the host.
//
// Clock: the wall-clock limit is charged from the moment the runner is about
// to run untrusted code (its START on the status pipe), so sandbox and
// interpreter start-up are not; Config.StartupTimeout bounds those apart.
//
// Warm sandboxes (warm.go): program runs without a source directory go to a
// pre-started sandbox whose runner forks each run into fresh PID, mount and
// IPC namespaces with fresh tmpfs /work, /tmp and /dev/shm and its own
// /proc, with every capability dropped; when the run's process ends the
// kernel kills whatever it left. Each run is as isolated as a cold one and
// has the same limits, pass signal and output capture, without paying for
// bubblewrap and Python start-up each time.
//
// The Python runner's humaneval mode runs a program as the
// human-eval-infilling harness does: the functions its reliability guard
// disables are disabled the same way (set to None, listed in runner.py and
// probed one by one by the hostile suite), stdin raises OSError, and the
// program runs in an empty globals dict, so verdicts agree with the
// reference harness's — in addition to the sandbox.
//
// Runs other than the Python runner's (node's test runners with infill's
// reporters, go test) give their command, their trusted files (RunnerFiles,
// at /run/runner), binds (a toolchain; bound for the sandbox's user also
// where it cannot reach them: reach.go), a Cache kept between runs (cache.go)
// and, when their clock starts at an event of their own, an Output reader.
//
// The package knows no test runner, benchmark or metric: the evaluator's
// test runners plan Specs, read Results (the runner's ENV, counts and
// failure; pytest's usage errors, a command exiting 127) and judge them.
package sandbox
