package iptables

import (
	"fmt"
	"strings"
)

// lineRun is where a chain's rule lines lie in a dump when they follow one
// another with nothing between them, as iptables-save writes every chain:
// a digest then says only where the run starts and ends, and the lines are
// found when the chain is first used.
type lineRun struct {
	// start and end are the byte offsets of the first line's start and
	// the last line's end (before its line break); first is the first
	// line's number, count the number of lines.
	start, end, first, count int
}

// asRun is the run of lines, when they form one: each the line after the
// one before, with the command where a read finds it (ruleCol).
func asRun(text string, lines []lazyLine) (lineRun, bool) {
	if len(lines) == 0 {
		return lineRun{}, false
	}
	first, _ := offsetIn(text, lines[0].text)
	end := first
	for i, ln := range lines {
		off, ok := offsetIn(text, ln.text)
		if !ok || col(ruleCol(ln.text)) != int(ln.col) || i > 0 && int(ln.n) != int(lines[i-1].n)+1 {
			return lineRun{}, false
		}
		if i > 0 && off != end+1 && (off != end+2 || text[end] != '\r') {
			return lineRun{}, false
		}
		end = off + len(ln.text)
	}
	return lineRun{start: first, end: end, first: int(lines[0].n), count: len(lines)}, true
}

// col is ruleCol's column, -1 when there is none.
func col(c int, ok bool) int {
	if !ok {
		return -1
	}
	return c
}

// ruleCol is where a rule line's command starts, as a read finds it:
// after the blanks, and after the counters of iptables-save -c.
func ruleCol(line string) (int, bool) {
	i := lexSkipBlank(line, 0)
	if i < len(line) && line[i] == '[' {
		j := strings.IndexByte(line[i:], ']')
		if j < 0 {
			return 0, false
		}
		i = lexSkipBlank(line, i+j+1)
	}
	return i, i < len(line) && line[i] == '-'
}

// split finds the run's lines in text. A run that does not hold count rule
// lines is of a damaged digest: the error names the first line at fault.
func (r *lineRun) split(src, text string) ([]lazyLine, error) {
	if r.start > 0 && text[r.start-1] != '\n' || r.end < len(text) && text[r.end] != '\n' && text[r.end] != '\r' {
		return nil, &ParseError{Source: src, Line: r.first, Column: 1,
			Msg: fmt.Sprintf("the index says rule lines lie from byte %d to %d, which are not whole lines (a damaged index?)", r.start, r.end)}
	}
	out := make([]lazyLine, 0, min(r.count, (r.end-r.start)/4+1))
	rest, n := text[r.start:r.end], r.first
	for {
		line, after, more := strings.Cut(rest, "\n")
		line = strings.TrimSuffix(line, "\r")
		c, ok := ruleCol(line)
		if !ok || len(out) == r.count {
			return out, &ParseError{Source: src, Line: n, Column: 1, Text: line,
				Msg: fmt.Sprintf("the index says %d rule lines start on line %d, but this one is not one of them (a damaged index?)", r.count, r.first)}
		}
		out = append(out, lazyLine{text: line, n: int32(n), col: int32(c)})
		if !more {
			break
		}
		rest, n = after, n+1
	}
	if len(out) != r.count {
		return out, &ParseError{Source: src, Line: n, Column: 1, Msg: fmt.Sprintf("the index says %d rule lines start on line %d, but %d do (a damaged index?)", r.count, r.first, len(out))}
	}
	return out, nil
}
