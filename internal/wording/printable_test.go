package wording

import (
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"default/nginx:http cluster IP", "default/nginx:http cluster IP", "default/nginx:http cluster IP"},
		{"ünïcode ✓ 日本", "ünïcode ✓ 日本", "ünïcode ✓ 日本"},
		// An OSC retitling the window, a clear screen, a colour, and the
		// one-character CSI of C1.
		{"IP\x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b31m", `IP\x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b31m`, `IP\x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b31m`},
		{"a\nb\tc\r", `a\nb\tc\r`, "a\nb\tc\\r"},
		{"\x7f\x00", `\x7f\x00`, `\x7f\x00`},
		{"abc\u202edef\u2066", `abc\u202edef\u2066`, `abc\u202edef\u2066`},
		{"bad \xff\xc2 utf-8", `bad \xff\xc2 utf-8`, `bad \xff\xc2 utf-8`},
		{`a "quoted\" \x1b"`, `a "quoted\" \x1b"`, `a "quoted\" \x1b"`},
	} {
		if got := Printable(c.in); got != c.line {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := PrintableText(c.in); got != c.text {
			t.Errorf("PrintableText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("IP\x1b]0;owned\x07\x1b[2J\u009b31m\n\t\xff\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Printable(s), PrintableText(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: not UTF-8: %q", s, out)
			}
			for _, r := range out {
				if unprintable(r) && r != '\n' && r != '\t' {
					t.Fatalf("%q: %q keeps %U", s, out, r)
				}
			}
		}
		for _, r := range Printable(s) {
			if r == '\n' || r == '\t' {
				t.Fatalf("%q: a field keeps %q", s, r)
			}
		}
	})
}
