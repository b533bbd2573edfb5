package nftables

import (
	"fmt"
	"strings"
)

// The text form of `nft list ruleset` is read in two steps: lexTokens
// splits it into words, strings, braces and line ends, and the reader
// (text_read.go) turns the tokens into the JSON-shaped objects that
// `nft -j list ruleset` prints, which the JSON parser then reads, so that
// both forms have one meaning.

type tokKind int

const (
	tokWord    tokKind = iota
	tokString          // "…", unquoted
	tokPunct           // { } ; ,
	tokNL              // a line end
	tokComment         // # … to the line end, without the #
)

type token struct {
	kind      tokKind
	text      string
	line, col int
}

func (t token) is(s string) bool { return (t.kind == tokWord || t.kind == tokPunct) && t.text == s }

func (t token) String() string {
	switch t.kind {
	case tokNL:
		return "the line end"
	case tokString:
		return fmt.Sprintf("%q", t.text)
	case tokComment:
		return "#" + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// lexTokens splits the text into tokens; an unterminated string is an
// error naming its line and column.
func lexTokens(data []byte) ([]token, error) {
	var out []token
	line, col := 1, 1
	s := string(data)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			out = append(out, token{kind: tokNL, line: line, col: col})
			i++
			line, col = line+1, 1
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			col++
			continue
		case c == '#':
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				j = len(s) - i
			}
			out = append(out, token{kind: tokComment, text: strings.TrimSpace(s[i+1 : i+j]), line: line, col: col})
			col += j
			i += j
			continue
		case c == '{' || c == '}' || c == ';' || c == ',':
			out = append(out, token{kind: tokPunct, text: s[i : i+1], line: line, col: col})
			i++
			col++
			continue
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\n' {
					break
				}
				if s[j] == '\\' && j+1 < len(s) && s[j+1] != '\n' {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) || s[j] != '"' {
				return nil, fmt.Errorf("line %d, column %d: string not closed on its line", line, col)
			}
			out = append(out, token{kind: tokString, text: b.String(), line: line, col: col})
			col += j + 1 - i
			i = j + 1
			continue
		}
		j := i
		for j < len(s) && !strings.ContainsRune(" \t\r\n{};,\"#", rune(s[j])) {
			j++
		}
		out = append(out, token{kind: tokWord, text: s[i:j], line: line, col: col})
		col += j - i
		i = j
	}
	out = append(out, token{kind: tokNL, line: line, col: col})
	return out, nil
}
