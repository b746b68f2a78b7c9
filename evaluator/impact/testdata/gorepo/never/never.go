// Package never is imported by nothing and has no tests.
package never

// Never returns zero.
func Never() int {
	return 0
}
