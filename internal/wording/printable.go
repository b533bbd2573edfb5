package wording

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character a terminal would act on
// rather than show written as an escape a reader can see: the controls
// (C0, DEL, C1: "\x1b", "\u009b"), newline and tab included, the marks
// that reorder text (U+202E …), and bytes that are not UTF-8 ("\xff").
// It is for one field of a line (a rule's comment, a name from the API
// objects): strings from the kernel and the objects reach the text
// output through it, so none can move the cursor, retitle the window or
// fake a line of the report. Text with nothing to escape is returned as
// it is.
func Printable(s string) string { return printable(s, false) }

// PrintableText is Printable for a whole text output, whose newlines and
// tabs are its own layout: those are kept.
func PrintableText(s string) string { return printable(s, true) }

func printable(s string, layout bool) string {
	i := firstUnprintable(s, layout)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case layout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unprintable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnprintable is the offset of the first character to escape, -1
// when there is none.
func firstUnprintable(s string, layout bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unprintable(r) && !(layout && (r == '\n' || r == '\t')) {
			return i
		}
		i += size
	}
	return -1
}

// unprintable reports whether a terminal acts on r: a control character,
// or a mark that reorders the text around it.
func unprintable(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
