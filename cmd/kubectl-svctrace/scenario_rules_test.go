package main

import (
	"fmt"
	"regexp"
	"strings"
)

// ruleEdit is one line of a scenario's rules.edit section (the language is
// described in testdata/scenarios/README.md).
type ruleEdit struct {
	pos   string // FILE:LINE of the edit, for messages
	op    string // "-", "-~", "=", "=~" or "+"
	arg   string
	regex *regexp.Regexp
}

// parseRuleEdits reads a rules.edit section whose first line is line
// first of file.
func parseRuleEdits(file string, first int, data string) ([]ruleEdit, error) {
	var edits []ruleEdit
	for i, l := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
		pos := fmt.Sprintf("%s:%d", file, first+i)
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		op, arg, ok := strings.Cut(l, " ")
		if !ok || arg == "" {
			return nil, fmt.Errorf("%s: %q: want an operation (-, -~, =, =~, +), a space and its argument", pos, l)
		}
		e := ruleEdit{pos: pos, op: op, arg: arg}
		switch op {
		case "-", "=", "+":
		case "-~", "=~":
			re, err := regexp.Compile(arg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pos, err)
			}
			e.regex = re
		default:
			return nil, fmt.Errorf("%s: unknown operation %q: want -, -~, =, =~ or +", pos, op)
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("%s:%d: the rules.edit section holds no edit", file, first)
	}
	return edits, nil
}

// editIPTables applies edits to an iptables-save dump, line by line.
func editIPTables(text string, edits []ruleEdit) (string, error) {
	lines := strings.Split(text, "\n")
	deleted := make([]bool, len(lines))
	after := make([][]string, len(lines))
	cursor := -1
	for _, e := range edits {
		if e.op == "+" {
			if cursor < 0 {
				return "", fmt.Errorf("%s: + needs a line before it (- or =) to say where the new line goes", e.pos)
			}
			after[cursor] = append(after[cursor], e.arg)
			continue
		}
		var hits []int
		for i, l := range lines {
			if deleted[i] {
				continue
			}
			if (e.regex != nil && e.regex.MatchString(l)) || (e.regex == nil && l == e.arg) {
				hits = append(hits, i)
			}
		}
		if len(hits) == 0 {
			return "", fmt.Errorf("%s: %s %q matches no line of the dump", e.pos, e.op, e.arg)
		}
		if len(hits) > 1 && e.op != "-~" {
			return "", fmt.Errorf("%s: %s %q matches %d lines of the dump (lines %d and %d, ...), want exactly one", e.pos, e.op, e.arg, len(hits), hits[0]+1, hits[1]+1)
		}
		for _, i := range hits {
			deleted[i] = e.op == "-" || e.op == "-~"
		}
		cursor = hits[len(hits)-1]
	}
	var out []string
	for i, l := range lines {
		if !deleted[i] {
			out = append(out, l)
		}
		out = append(out, after[i]...)
	}
	return strings.Join(out, "\n"), nil
}
