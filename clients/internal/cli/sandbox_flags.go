package cli

import (
	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// sandboxFlags are the limits of this process's own sandbox (eval mask,
// eval run and grade --local, eval compare), named as infill-server names
// them, so that a reason's "--sandbox-memory raises it" holds wherever the
// run was. The limits' definitions are sandbox.LimitFlags'; node, goRoot
// and goModCache are the toolchains of JavaScript/TypeScript and Go tests
// (evaluator.Toolchains).
type sandboxFlags struct {
	sandbox.LimitFlags
	node               string
	goRoot, goModCache string
}

// addSandboxFlags registers the limit flags.
func addSandboxFlags(cmd *cobra.Command, f *sandboxFlags, scope string) {
	fl := cmd.Flags()
	for _, d := range f.Defs(scope) {
		fl.Var(d.Value, d.Name, d.Usage)
	}
	fl.StringVar(&f.node, "sandbox-node", "", scope+"node that runs JavaScript/TypeScript tests (default "+evaluator.DefaultNodePath+")")
	fl.StringVar(&f.goRoot, "sandbox-go-root", "", scope+"GOROOT of the Go toolchain Go repositories' tests run with, bound read-only (default: go env GOROOT)")
	fl.StringVar(&f.goModCache, "sandbox-go-modcache", "", scope+"module cache Go repositories build against, bound read-only and readable by the sandbox's user (default: go env GOMODCACHE)")
}

// apply sets c's limits from the flags given.
func (f *sandboxFlags) apply(c *sandbox.Config) { f.Apply(c) }

// toolchains are the test runners' toolchains the flags name.
func (f *sandboxFlags) toolchains() evaluator.Toolchains {
	return evaluator.Toolchains{Node: f.node, GoRoot: f.goRoot, GoModCache: f.goModCache}
}
