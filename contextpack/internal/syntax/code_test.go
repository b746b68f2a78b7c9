package syntax

import (
	"strings"
	"testing"
)

func TestCodeOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lang     Lang
		src, out string
	}{
		{LangPython, "x = f(a)  # or not at all\ny = 'it is' + \"so\"", "x = f(a)\ny =      +"},
		{LangPython, "\"\"\"Licence: or not\nat all\"\"\"\nz = g()", "\n\nz = g()"},
		{LangGo, "import \"net/http\" // the path\nv := '\\n' + `raw\nstring` /* c\n d */ w", "import\nv :=      +\n\n      w"},
		{LangRust, "fn f<'a>(s: &'a str) -> char { 'x' }", "fn f<'a>(s: &'a str) -> char {     }"},
		{LangPlain, "# kept", "# kept"},
		{LangJS, "return `${formatQuantity(count)}: ${", "return    formatQuantity(count)"},
		{LangTS, "x = `a ${f(y)} b` + z", "x =      f(y)     + z"},
	} {
		got := CodeOnly(tc.src, tc.lang)
		if len(got) != len(tc.src) {
			t.Errorf("CodeOnly(%q) changed the length: %q", tc.src, got)
		}
		norm := func(s string) string {
			var ls []string
			for _, l := range strings.Split(s, "\n") {
				ls = append(ls, strings.Join(strings.Fields(l), " "))
			}
			return strings.Join(ls, "\n")
		}
		if norm(got) != norm(tc.out) {
			t.Errorf("CodeOnly(%q) = %q, want %q", tc.src, got, tc.out)
		}
	}
}
