// Package calc is arithmetic for the impact runner's tests.
package calc

// Scale is computed when the package is initialised.
var Scale = twice(5)

func twice(x int) int { return 2 * x }

// Add adds.
func Add(a, b int) int {
	return a + b
}

// Mul multiplies by repeated addition.
func Mul(a, b int) int {
	r := 0
	for i := 0; i < b; i++ {
		r = Add(r, a)
	}
	return r
}
