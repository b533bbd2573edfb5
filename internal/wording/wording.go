// Package wording holds the small helpers that keep svctrace's messages
// English: counts with their noun in the right number, sizes.
package wording

import (
	"fmt"
	"strings"
)

// Count writes a count with its noun in the number it takes: "1 backend",
// "3 backends", "0 findings".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Bytes is a size for people: in bytes, or in KiB or MiB with one
// decimal.
func Bytes(n int) string {
	switch {
	case n < 1024:
		return Count(n, "byte", "bytes")
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
}

// And joins words as a sentence lists them: "a", "a and b", "a, b and c".
func And(words []string) string {
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		return strings.Join(words[:n-1], ", ") + " and " + words[n-1]
	}
}

// FirstN keeps the first n of a list, with a last line counting the
// others ("... 3 more").
func FirstN(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("... %d more", len(list)-n))
}
