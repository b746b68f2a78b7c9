package text

import "testing"

func TestBar(t *testing.T) {
	if len(Bar()) != 10 {
		t.Fatal(Bar())
	}
}

func TestSum(t *testing.T) {
	if Sum(1, 2) != "+++" {
		t.Fatal(Sum(1, 2))
	}
}
