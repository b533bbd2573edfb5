// Package suggest finds the names a mistyped one was probably meant to be,
// for error messages that say "did you mean".
package suggest

import (
	"fmt"
	"sort"
	"strings"
)

// Close returns the candidates closest to word, best first: those within a
// small edit distance (about a third of the word's length, at least 2),
// and those that contain it or that it contains. At most max are returned.
func Close(word string, candidates []string, max int) []string {
	type scored struct {
		name string
		d    int
	}
	limit := len(word) / 3
	if limit < 2 {
		limit = 2
	}
	lw := strings.ToLower(word)
	seen := map[string]bool{}
	var out []scored
	for _, c := range candidates {
		if seen[c] || c == word {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := distance(lw, lc)
		switch {
		case d <= limit:
		case lw != "" && (strings.Contains(lc, lw) || strings.Contains(lw, lc)):
			d = limit + 1
		default:
			continue
		}
		out = append(out, scored{c, d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].name < out[j].name
	})
	var names []string
	for i := 0; i < len(out) && i < max; i++ {
		names = append(names, out[i].name)
	}
	return names
}

// Hint is the end of an error message about an unknown name: the close
// matches if there are any, else the known names (up to a dozen), else
// that there are none. what names the kind in the plural ("Services").
func Hint(word string, candidates []string, what string) string {
	if m := Close(word, candidates, 5); len(m) > 0 {
		return "did you mean " + orList(m) + "?"
	}
	if len(candidates) == 0 {
		return "there are no " + what
	}
	c := append([]string(nil), candidates...)
	sort.Strings(c)
	if len(c) > 12 {
		return fmt.Sprintf("%s: %s, … (%d in all)", what, strings.Join(c[:12], ", "), len(c))
	}
	return what + ": " + strings.Join(c, ", ")
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// distance is the Damerau–Levenshtein distance (with adjacent
// transpositions) between a and b, by bytes.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
