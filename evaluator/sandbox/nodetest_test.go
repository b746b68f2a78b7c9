package sandbox

import (
	"reflect"
	"testing"
)

// TestNodeArgv checks the command lines of the JavaScript runners: node's
// options before --test and the files after it, infill's reporter always.
func TestNodeArgv(t *testing.T) {
	s := &Sandbox{cfg: Config{NodePath: "/usr/bin/node"}}
	reporters := []string{"--test-reporter=spec", "--test-reporter-destination=stdout",
		"--test-reporter=/run/infill/node_reporter.mjs", "--test-reporter-destination=/dev/null"}
	for _, c := range []struct {
		spec Spec
		want []string
	}{
		{Spec{Mode: ModeNode}, append(append([]string{"/usr/bin/node"}, reporters...), "--test")},
		{Spec{Mode: ModeNode, Args: []string{"--import", "tsx", "--test-timeout=5000", "a.test.ts", "--b.test.ts"}},
			append(append([]string{"/usr/bin/node"}, reporters...), "--import", "tsx", "--test-timeout=5000", "--test", "a.test.ts", "--b.test.ts")},
		{Spec{Mode: ModeNode, Args: []string{"-r"}}, append(append([]string{"/usr/bin/node"}, reporters...), "-r", "--test")},
		{Spec{Mode: ModeVitest, Target: "node_modules/vitest/vitest.mjs", Args: []string{"src/a.test.ts"}},
			[]string{"/usr/bin/node", "node_modules/vitest/vitest.mjs", "run", "--no-cache", "--reporter=default",
				"--reporter=/run/infill/vitest_reporter.mjs", "src/a.test.ts"}},
		{Spec{Mode: ModeNode, Environment: &Environment{Interpreter: "tools/node"}},
			append(append([]string{"/work/repo/tools/node"}, reporters...), "--test")},
	} {
		if got := s.nodeArgv(&c.spec, "/work/repo"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v %q:\n got %q\nwant %q", c.spec.Mode, c.spec.Args, got, c.want)
		}
	}
	if err := (&Spec{Mode: ModeVitest, Target: "../vitest.mjs"}).validate(); err == nil {
		t.Error("a vitest entry outside the copy was accepted")
	}
}

// TestNodeRlimits checks that only JavaScript runs get the large address
// space, and that the other limits stay.
func TestNodeRlimits(t *testing.T) {
	s := &Sandbox{cfg: Config{}.WithDefaults()}
	lim := limits{cpu: 5}
	py := nodeRlimits(ModePytest, s.rlimits(lim, 0))
	js := nodeRlimits(ModeNode, s.rlimits(lim, 0))
	for i := range py {
		switch {
		case py[i].prlimit == "as" && (py[i].hard != s.cfg.AddressSpaceBytes || js[i].hard != nodeAddressSpace):
			t.Errorf("as: pytest %d, node %d", py[i].hard, js[i].hard)
		case py[i].prlimit != "as" && py[i] != js[i]:
			t.Errorf("%s differs: %v, %v", py[i].prlimit, py[i], js[i])
		}
	}
}
