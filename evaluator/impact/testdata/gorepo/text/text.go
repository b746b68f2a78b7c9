// Package text builds strings.
package text

import (
	"strings"

	"example.com/gorepo/calc"
)

// Bar is a bar of Scale characters.
func Bar() string {
	return strings.Repeat("=", calc.Scale)
}

// Sum says a sum.
func Sum(a, b int) string {
	if a < 0 {
		return "negative"
	}
	return strings.Repeat("+", calc.Add(a, b))
}
