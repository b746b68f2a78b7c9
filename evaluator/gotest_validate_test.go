package evaluator

import "testing"

// TestValidateGo: the flags the Go runner owns are refused in any of go's
// spellings; other flags and well-formed test names pass.
func TestValidateGo(t *testing.T) {
	for _, args := range [][]string{
		{"-json"}, {"-json=true"}, {"--json"}, {"-c"}, {"-c=true"}, {"-o", "x"}, {"-o=x"}, {"--o=x"},
		{"-exec", "sh"}, {"-exec=sh"}, {"-v", "-exec=sh"},
	} {
		if err := validateGo(&TestSpec{Kind: TestGo, Args: args}); err == nil {
			t.Errorf("args %q: accepted", args)
		}
	}
	for _, tests := range [][]string{{""}, {"TestA B"}, {"TestA\tB"}} {
		if err := validateGo(&TestSpec{Kind: TestGo, Tests: tests}); err == nil {
			t.Errorf("tests %q: accepted", tests)
		}
	}
	ok := &TestSpec{Kind: TestGo, Args: []string{"-v", "-run", "TestA", "-race", "-count=2", "-tags=json", "-timeout=30s", "-short"},
		Tests: []string{"TestA", "TestB/case"}}
	if err := validateGo(ok); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
}
