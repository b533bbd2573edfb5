package netnstest

import "strings"

// LineDiff names the lines only one of two dumps has, "- " for want's and
// "+ " for got's, in their order: what a test shows when the kernel's
// state is not the one expected.
func LineDiff(want, got string) string {
	set := func(text string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := set(want), set(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
