package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// sandboxFlags are the limits of this process's own sandbox (eval mask,
// eval run and grade --local), named as infill-server names them, so that
// a reason's "--sandbox-memory raises it" holds wherever the run was.
type sandboxFlags struct {
	memory, addressSpace, fileSize sizeFlag
	processes                      int
	node                           string
	goRoot, goModCache             string
}

// addSandboxFlags registers the limit flags.
func addSandboxFlags(cmd *cobra.Command, f *sandboxFlags, scope string) {
	fl := cmd.Flags()
	fl.Var(&f.memory, "sandbox-memory", scope+"memory each process of a test run may write to (RLIMIT_DATA: heap, thread stacks), e.g. 8GiB (default "+sandbox.FormatBytes(sandbox.DefaultMemoryBytes)+")")
	fl.Var(&f.addressSpace, "sandbox-address-space", scope+"address space per process (RLIMIT_AS), a backstop for shared memory (default 4 × --sandbox-memory)")
	fl.IntVar(&f.processes, "sandbox-processes", 0, fmt.Sprintf("%sprocesses and threads of a test run at once (default %d)", scope, sandbox.DefaultProcesses))
	fl.StringVar(&f.node, "sandbox-node", "", scope+"node that runs JavaScript/TypeScript tests (default "+sandbox.DefaultNodePath+")")
	fl.Var(&f.fileSize, "sandbox-file-size", scope+"largest file a test run may write (default "+sandbox.FormatBytes(sandbox.DefaultFileSizeBytes)+")")
	fl.StringVar(&f.goRoot, "sandbox-go-root", "", scope+"GOROOT of the Go toolchain Go repositories' tests run with, bound read-only (default: go env GOROOT)")
	fl.StringVar(&f.goModCache, "sandbox-go-modcache", "", scope+"module cache Go repositories build against, bound read-only and readable by the sandbox's user (default: go env GOMODCACHE)")
}

// apply sets c's limits from the flags given.
func (f *sandboxFlags) apply(c *sandbox.Config) {
	c.MemoryBytes = int64(f.memory)
	c.AddressSpaceBytes = int64(f.addressSpace)
	c.Processes = f.processes
	c.FileSizeBytes = int64(f.fileSize)
	c.NodePath = f.node
	c.GoRoot, c.GoModCache = f.goRoot, f.goModCache
}

// sizeFlag is a flag holding a size in bytes: "512MiB", "4GiB", "2G"
// (binary units: K, M, G, T, with or without "iB"/"B"), or a plain number
// of bytes.
type sizeFlag int64

func (b *sizeFlag) String() string {
	if *b == 0 {
		return ""
	}
	return sandbox.FormatBytes(int64(*b))
}

func (b *sizeFlag) Type() string { return "size" }

func (b *sizeFlag) Set(s string) error {
	n, err := sandbox.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = sizeFlag(n)
	return nil
}
