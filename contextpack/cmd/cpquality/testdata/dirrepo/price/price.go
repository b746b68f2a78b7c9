// Package price sums and formats prices.
package price

import "fmt"

// Item is one priced thing in a cart.
type Item struct {
	Name  string
	Cents int
}

// Sum adds the items' prices.
func Sum(items []Item) int {
	total := 0
	for _, it := range items {
		total += it.Cents
	}
	return total
}

// Format writes cents as dollars.
func Format(cents int) string {
	return fmt.Sprintf("$%d.%02d", cents/100, cents%100)
}
