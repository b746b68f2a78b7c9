// Package sandbox owns the isolated execution of untrusted code for the
// evaluator: every run gets a private writable copy of its repository or
// program inside a bubblewrap sandbox (new user, PID, network, mount, IPC and
// UTS namespaces, non-root uid, read-only system, private tmpfs /tmp), rlimits
// applied with prlimit(1) inside the namespace (CPU time, address space,
// processes, file size, open files, no core dumps), a wall-clock timeout that
// kills the whole namespace, capped output capture, and a positive pass signal
// (a per-run nonce reported by a trusted runner only after the tests returned
// normally) so that exit status 0 alone never counts as a pass.
//
// The package knows nothing about benchmarks or metrics; package evaluator
// maps tasks onto Specs and Results onto verdicts.
package sandbox
