// Package wording holds the small helpers that keep svctrace's messages
// English: counts with their noun in the right number.
package wording

import "fmt"

// Count writes a count with its noun in the number it takes: "1 backend",
// "3 backends", "0 findings".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
