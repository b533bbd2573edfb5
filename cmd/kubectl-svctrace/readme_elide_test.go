package main

import (
	"fmt"
	"strings"
	"testing"
)

// matchElided says whether got is what want shows. Without elisions the
// two are equal; with them, the parts of want between elisions appear in
// got in order, each contiguous, and every elision stands for at least
// one line. The first part is got's start and the last its end unless an
// elision comes before or after them.
func matchElided(want, got []string) error {
	parts := [][]string{nil}
	for i, l := range want {
		if !isElision(l) {
			parts[len(parts)-1] = append(parts[len(parts)-1], l)
			continue
		}
		if i > 0 && isElision(want[i-1]) {
			return fmt.Errorf("two elisions in a row")
		}
		parts = append(parts, nil)
	}
	if len(parts) == 1 {
		if !equalLines(want, got) {
			return fmt.Errorf("%s", firstDifference(want, got))
		}
		return nil
	}
	head, tail := parts[0], parts[len(parts)-1]
	if len(head) > len(got) || !equalLines(head, got[:len(head)]) {
		return fmt.Errorf("the lines before the first elision are not the start of the output")
	}
	tailStart := len(got) - len(tail)
	if tailStart < 0 || !equalLines(tail, got[tailStart:]) {
		return fmt.Errorf("the lines after the last elision are not the end of the output")
	}
	pos := len(head)
	for i, p := range parts[1 : len(parts)-1] {
		k := indexLines(got[:max(tailStart-1, 0)], p, pos+1)
		if k < 0 {
			return fmt.Errorf("the lines after elision %d (%q…) are not in the output after the lines before it", i+1, p[0])
		}
		pos = k + len(p)
	}
	if pos+1 > tailStart {
		return fmt.Errorf("an elision stands for no line")
	}
	return nil
}

// reElide writes got with the elisions of want kept where their
// neighbouring lines can still be found in got. It returns the indexes in
// want of the elisions it had to drop.
func reElide(want, got []string) ([]string, []int) {
	match := alignLines(want, got)
	type hide struct {
		from, to int // got[from:to] is hidden
		text     string
	}
	var hides []hide
	var dropped []int
	prevEnd := 0
	for e, l := range want {
		if !isElision(l) {
			continue
		}
		from, okFrom := hiddenStart(want, match, e)
		to, okTo := hiddenEnd(want, match, e, len(got))
		if !okFrom || !okTo || to-from < 1 || from < prevEnd || (len(hides) > 0 && from == prevEnd) {
			dropped = append(dropped, e)
			continue
		}
		hides = append(hides, hide{from, to, l})
		prevEnd = to
	}
	var out []string
	next := 0
	for _, h := range hides {
		out = append(out, got[next:h.from]...)
		out = append(out, h.text)
		next = h.to
	}
	return append(out, got[next:]...), dropped
}

// hiddenStart is where in got the lines hidden by the elision at want[e]
// begin: after the last line before it that is still in got, and after as
// many lines as want showed between that one and the elision.
func hiddenStart(want []string, match []int, e int) (int, bool) {
	shown := 0
	for i := e - 1; i >= 0 && !isElision(want[i]); i-- {
		if match[i] >= 0 {
			return match[i] + 1 + shown, true
		}
		shown++
	}
	return 0, shown == 0
}

// hiddenEnd is where the hidden lines end: before the first line after the
// elision that is still in got, less the lines want showed before it.
func hiddenEnd(want []string, match []int, e, n int) (int, bool) {
	shown := 0
	for i := e + 1; i < len(want) && !isElision(want[i]); i++ {
		if match[i] >= 0 {
			return match[i] - shown, true
		}
		shown++
	}
	return n, shown == 0
}

// alignLines pairs the lines of want with similar lines of got (see
// similarLines) in a longest common subsequence; match[i] is the line of
// got paired with want[i], or -1.
func alignLines(want, got []string) []int {
	n, m := len(want), len(got)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case !isElision(want[i]) && similarLines(want[i], got[j]):
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	match := make([]int, n)
	for i := range match {
		match[i] = -1
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case !isElision(want[i]) && similarLines(want[i], got[j]):
			match[i] = j
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			j++
		}
	}
	return match
}

// similarLines says whether b is a as the output writes it now: the same
// line, or one with the same indentation that shares at least half of the
// words of the longer of the two (a count reworded, an address changed).
func similarLines(a, b string) bool {
	if a == b {
		return true
	}
	if len(a)-len(strings.TrimLeft(a, " ")) != len(b)-len(strings.TrimLeft(b, " ")) {
		return false
	}
	wa, wb := strings.Fields(a), strings.Fields(b)
	if len(wa) < 2 || len(wb) < 2 {
		return false
	}
	count := map[string]int{}
	for _, w := range wa {
		count[w]++
	}
	shared := 0
	for _, w := range wb {
		if count[w] > 0 {
			count[w]--
			shared++
		}
	}
	return 2*shared >= max(len(wa), len(wb))
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// indexLines is the first index at or after from where p occurs in lines
// as a contiguous run, or -1.
func indexLines(lines, p []string, from int) int {
	for k := from; k+len(p) <= len(lines); k++ {
		if equalLines(lines[k:k+len(p)], p) {
			return k
		}
	}
	return -1
}

func firstDifference(want, got []string) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i] != got[i] {
			return fmt.Sprintf("line %d of the output differs: %q, README shows %q", i+1, got[i], want[i])
		}
	}
	return fmt.Sprintf("the output has %d lines, the README shows %d", len(got), len(want))
}

func TestMatchElided(t *testing.T) {
	got := strings.Split("a b c d e f", " ")
	for _, c := range []struct {
		want string
		ok   bool
	}{
		{"a b c d e f", true},
		{"a b c d e", false},
		{"a ... f", true},
		{"a ... c ... f", true},
		{"a ... c d ... f", true},
		{"... d ...", true},
		{"... e f", true},
		{"a b ...", true},
		{"a ... b c d e f", false}, // the elision hides nothing
		{"a ... d c ... f", false}, // out of order
		{"a ... c e ... f", false}, // not contiguous
		{"... a b c d e f", false}, // nothing before a
		{"a b c ... ... f", false}, // two in a row
		{"b ... f", false},         // b is not the start
		{"a ... e", false},         // e is not the end
		{"a ... c ... e f", true},  // each hides one line
		{"a ... b c d e f ...", false},
	} {
		err := matchElided(strings.Fields(c.want), got)
		if (err == nil) != c.ok {
			t.Errorf("%q against %q: error %v, want ok=%v", c.want, got, err, c.ok)
		}
	}
}

func TestReElide(t *testing.T) {
	for _, c := range []struct{ want, got, out string }{
		// A changed line next to an elision is shown in its new form.
		{"a|...|d|e", "a|b|c|D|e", "a|...|D|e"},
		// New lines inside the hidden range stay hidden.
		{"a|...|d", "a|b|x|y|c|d", "a|...|d"},
		// A reworded line between two elisions is found by its words; it
		// keeps its place and the elisions theirs.
		{"head|  ...|  1/3 10.0.0.2:80 pod web-2|  ...|tail", "head|  r1|  33% 10.0.0.2:80 pod web-2|  r2|tail",
			"head|  ...|  33% 10.0.0.2:80 pod web-2|  ...|tail"},
		// No line left on one side: the elision goes, all is shown.
		{"p|...|q", "r|s|t", "r|s|t"},
		// Leading and trailing elisions.
		{"...|c|...", "a|b|c|d", "...|c|..."},
	} {
		want, got := strings.Split(c.want, "|"), strings.Split(c.got, "|")
		out, _ := reElide(want, got)
		if strings.Join(out, "|") != c.out {
			t.Errorf("reElide(%q, %q) = %q, want %q", c.want, c.got, strings.Join(out, "|"), c.out)
		}
		if err := matchElided(out, got); err != nil {
			t.Errorf("reElide(%q, %q) = %q, which does not match: %v", c.want, c.got, strings.Join(out, "|"), err)
		}
	}
}
