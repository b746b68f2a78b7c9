package price

import "testing"

func TestSum(t *testing.T) {
	items := []Item{{Name: "tea", Cents: 250}, {Name: "cake", Cents: 325}}
	if got := Sum(items); got != 575 {
		t.Fatalf("Sum = %d, want 575", got)
	}
	if got := Format(575); got != "$5.75" {
		t.Fatalf("Format = %q", got)
	}
}
