// Package cart holds a shopper's chosen items.
package cart

import (
	"fmt"

	"example.com/shop/price"
)

// Cart is the items a shopper has chosen.
type Cart struct {
	Owner string
	Items []price.Item
}

// Total is the cart's total in cents.
func (c *Cart) Total() int {
	return price.Sum(c.Items)
}

// Receipt renders the cart for the shopper.
func (c *Cart) Receipt() string {
	return fmt.Sprintf("%s owes %s", c.Owner, price.Format(c.Total()))
}
