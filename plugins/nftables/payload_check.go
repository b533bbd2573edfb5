package nftables

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// nftToken is one word of an nft script: a bare word, a quoted string
// (quoted, its text without the quotes), or one of "{", "}", ";".
type nftToken struct {
	text   string
	quoted bool
}

// nftCommand is one command of a script, as nft splits them: at a newline
// or a ';' outside braces.
type nftCommand []nftToken

func (c nftCommand) String() string {
	var b strings.Builder
	for i, t := range c {
		if i > 0 {
			b.WriteByte(' ')
		}
		if t.quoted {
			b.WriteString(`"` + t.text + `"`)
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

// readScript splits an nft script into its commands the way nft's scanner
// reads it: blanks separate words, a quoted string runs to the next quote
// (nft has no escape in one), '#' starts a comment, and a newline or ';'
// outside braces ends a command. What a repair never writes is an error:
// a comment, a control character, a string or braces over a line's end.
func readScript(script string) ([]nftCommand, error) {
	var out []nftCommand
	var cur nftCommand
	depth, line := 0, 1
	end := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for i := 0; i < len(script); {
		c := script[i]
		switch {
		case c == '\n' && depth > 0:
			return nil, fmt.Errorf("line %d: braces left open at the line's end", line)
		case c == '\n':
			end()
			line++
			i++
		case c == ' ' || c == '\t':
			i++
		case c == '#':
			return nil, fmt.Errorf("line %d: a comment, which a repair never writes", line)
		case c < ' ' || c == 0x7f:
			return nil, fmt.Errorf("line %d: a control character (%q)", line, c)
		case c == ';' && depth == 0:
			end()
			i++
		case c == '{' || c == '}' || c == ';':
			if c == '{' {
				depth++
			} else if c == '}' {
				if depth--; depth < 0 {
					return nil, fmt.Errorf("line %d: '}' closes no brace", line)
				}
			}
			cur = append(cur, nftToken{text: string(c)})
			i++
		case c == '"':
			j := strings.IndexByte(script[i+1:], '"')
			if j < 0 || strings.ContainsAny(script[i+1:i+1+j], "\n\r") {
				return nil, fmt.Errorf("line %d: a quoted string left open at the line's end", line)
			}
			cur = append(cur, nftToken{text: script[i+1 : i+1+j], quoted: true})
			i += j + 2
		default:
			j := i
			for j < len(script) && !strings.ContainsRune(" \t\n;{}\"#", rune(script[j])) && script[j] >= ' ' && script[j] != 0x7f {
				j++
			}
			cur = append(cur, nftToken{text: script[i:j]})
			i = j
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("line %d: braces left open at the end", line)
	}
	end()
	return out, nil
}

// CheckScript reads an nft script back before it is written, and refuses
// one that does anything but the changes it was made from, or anything
// outside kube-proxy's table of the family: another table or family, a
// chain on a hook other than kube-proxy's own base chains, a rule in a
// base chain that is not one of kube-proxy's jumps, a command other than
// adding, flushing and deleting kube-proxy's chains, sets, maps and
// elements, or a rendered command that nft would read as several.
func CheckScript(current, target *Layout, changes []dataplane.Change, script string) error {
	got, err := readScript(script)
	if err != nil {
		return fmt.Errorf("the nft script: %w: refusing to write it", err)
	}
	want := map[string]int{}
	for _, text := range scriptCommands(current, target, changes) {
		cmds, err := readScript(text)
		if err != nil || len(cmds) != 1 {
			return fmt.Errorf("the nft script: rendered command %q reads as %d commands (%v): refusing to write it", text, len(cmds), err)
		}
		want[cmds[0].String()]++
	}
	for _, c := range got {
		if err := allowed(c, target.Family); err != nil {
			return fmt.Errorf("the nft script: %q: %w: refusing to write it", c.String(), err)
		}
	}
	for _, c := range got {
		if want[c.String()] == 0 {
			return fmt.Errorf("the nft script: %q is none of the changes it was made from: refusing to write it", c.String())
		}
		want[c.String()]--
	}
	for text, n := range want {
		if n > 0 {
			return fmt.Errorf("the nft script lacks %q of the changes it was made from: refusing to write it", text)
		}
	}
	return nil
}

// scriptCommands are the commands the changes stand for, each as Script
// writes it.
func scriptCommands(current, target *Layout, changes []dataplane.Change) []string {
	tb := target.Family + " " + KubeProxyTable
	out := []string{fmt.Sprintf("add table %s { comment %q ; }", tb, "rules for kube-proxy")}
	for _, c := range changes {
		s, ok := target.Sets[c.Object]
		if !ok {
			s = current.Sets[c.Object]
		}
		if s == nil {
			switch c.Op {
			case "create":
				out = append(out, chainDecl(tb, c.Object, target.Chains[c.Object]))
			case "rewrite", "delete":
				out = append(out, "flush chain "+tb+" "+c.Object)
			}
			if c.Op == "delete" {
				out = append(out, "delete chain "+tb+" "+c.Object)
			}
			for _, r := range c.Add {
				out = append(out, "add rule "+tb+" "+c.Object+" "+r)
			}
			continue
		}
		switch c.Op {
		case "rewrite":
			out = append(out, "delete "+setKind(current.Sets[c.Object])+" "+tb+" "+c.Object, setDecl(tb, c.Object, s))
		case "create":
			out = append(out, setDecl(tb, c.Object, s))
		case "edit":
			for _, e := range c.Remove {
				out = append(out, "delete element "+tb+" "+c.Object+" { "+elementKey(e)+" }")
			}
		case "delete":
			out = append(out, "delete "+setKind(s)+" "+tb+" "+c.Object)
			continue
		}
		for _, e := range c.Add {
			out = append(out, "add element "+tb+" "+c.Object+" { "+e+" }")
		}
	}
	for i := range out {
		out[i] = strings.TrimSuffix(out[i], "\n")
	}
	return out
}
