package index

import (
	"strings"
	"testing"
)

func TestIsBuildOutput(t *testing.T) {
	long := strings.Repeat("x = 1;\n", 200)
	for _, tc := range []struct {
		path, content string
		want          bool
	}{
		{"dist/lib.js", long + "//# sourceMappingURL=lib.js.map\n", true},
		{"dist/lib.css", long + "/*# sourceMappingURL=lib.css.map */\n", true},
		{"types/index.d.ts", "export declare function f(): void;\n//# sourceMappingURL=index.d.ts.map", true},
		{"vendor/jquery.min.js", "!function(e){}", true},
		// a source that mentions source maps early on is not build output
		{"lib/sourcemaps.js", "// reads sourceMappingURL= comments\n" + long, false},
		{"lib/core/request.js", long, false},
		{"build/main.go", "package main\n", false},
		{"min.d/x.js", long, false},
	} {
		if got := IsBuildOutput(tc.path, tc.content); got != tc.want {
			t.Errorf("IsBuildOutput(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
