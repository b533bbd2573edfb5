package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestREADME runs every command of every ```console block of README.md (and
// of the plane READMEs) and
// compares its output (stdout, then stderr) with the lines that follow it
// in the block. "$ kubectl svctrace …" runs the CLI in-process; "$ echo $?"
// prints the exit code of the command before it. A line that is "..."
// (indented or not) stands for one or more skipped lines: the lines shown
// must appear in order, contiguous between elisions. Trailing spaces and
// trailing blank lines are not compared.
//
// Each block runs in a directory of its own whose entries link to those
// at the top of the repository, so that relative paths to shipped files
// work and files the commands write (-f snap.yaml) land there.
//
// go test ./cmd/kubectl-svctrace -run TestREADME -update rewrites the
// blocks from the real output, keeping the elisions where their
// neighbouring lines are still there.
func TestREADME(t *testing.T) {
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range readmes(t, top) {
		t.Run(doc, func(t *testing.T) { checkReadme(t, top, doc) })
	}
}

// readmes are the documents whose examples are checked: the top README,
// every page of docs/ and each plane's README (their commands run from the
// top of the repository too).
func readmes(t *testing.T, top string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(top, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (%d pages)", err, len(docs))
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return append(out, "plugins/iptables/README.md", "plugins/nftables/README.md")
}

func checkReadme(t *testing.T, top, doc string) {
	path := filepath.Join(top, doc)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	blocks, err := parseConsoleBlocks(lines)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	if len(blocks) == 0 && doc == "README.md" {
		t.Fatalf("%s has no ```console block", doc)
	}
	var edits []readmeEdit
	for _, b := range blocks {
		scratch := linkedScratch(t, top)
		t.Run(fmt.Sprintf("line%d", b.line+1), func(t *testing.T) {
			t.Chdir(scratch)
			last := -1
			for _, c := range b.commands {
				got, code, err := c.execute(t, last)
				if err != nil {
					t.Fatalf("%s:%d: %v", doc, c.line+1, err)
				}
				last = code
				shown := lines[c.outStart:c.outEnd]
				want := trimLines(shown)
				if err := matchElided(want, got); err == nil {
					continue
				} else if !*update {
					t.Errorf("%s:%d: the output of %q is not what the README shows (%v).\n%s:%d-%d:\n%s\nreal output:\n%s\n(go test ./cmd/kubectl-svctrace -run TestREADME -update rewrites the README from the real output)",
						doc, c.line+1, c.text, err, doc, c.outStart+1, c.outEnd, strings.Join(shown, "\n"), strings.Join(got, "\n"))
					continue
				}
				repl, dropped := reElide(want, got)
				for _, d := range dropped {
					t.Logf("%s:%d: elision dropped: the lines around it are no longer in the output", doc, c.outStart+d+1)
				}
				if err := matchElided(repl, got); err != nil {
					t.Fatalf("%s:%d: rewritten output does not match (%v): a bug in reElide", doc, c.line+1, err)
				}
				// Keep the blank lines that set the output off from the
				// next command.
				repl = append(repl, shown[len(want):]...)
				edits = append(edits, readmeEdit{c.outStart, c.outEnd, repl})
			}
		})
	}
	if *update && len(edits) > 0 {
		for i := len(edits) - 1; i >= 0; i-- {
			e := edits[i]
			lines = append(lines[:e.start:e.start], append(e.lines, lines[e.end:]...)...)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %d outputs in %s", len(edits), doc)
	}
}

// The drift example reads a shipped dump that is the bundled node1 capture
// with exactly one rule deleted, as examples/README.md says.
func TestREADMEBrokenDumpIsTheCaptureLessOneRule(t *testing.T) {
	orig, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	broken, err := os.ReadFile("../../examples/node1-nginx-rule-deleted.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	const deleted = `-A KUBE-SVC-P4Q3KNUAWJVP4ILH -m comment --comment "default/nginx:http -> 10.244.0.5:8080"`
	var kept []string
	for _, l := range strings.SplitAfter(string(orig), "\n") {
		if !strings.HasPrefix(l, deleted) {
			kept = append(kept, l)
		}
	}
	if n := strings.Count(string(orig), "\n") - strings.Count(strings.Join(kept, ""), "\n"); n != 1 {
		t.Fatalf("%d lines of the capture start with %s, want 1", n, deleted)
	}
	if strings.Join(kept, "") != string(broken) {
		t.Error("examples/node1-nginx-rule-deleted.iptables-save.txt is not the node1 capture without that one rule; remake it as examples/README.md says")
	}
}

// readmeEdit replaces README lines [start, end) with lines.
type readmeEdit struct {
	start, end int
	lines      []string
}

// readmeCommand is one "$ …" of a console block and the output lines that
// follow it, [outStart, outEnd) of the README.
type readmeCommand struct {
	line, outStart, outEnd int
	text                   string
	args                   []string
}

type consoleBlock struct {
	line     int
	commands []readmeCommand
}

// parseConsoleBlocks finds the ```console blocks and their commands. A
// command line ending in a backslash continues on the next line.
func parseConsoleBlocks(lines []string) ([]consoleBlock, error) {
	var blocks []consoleBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```console" {
			continue
		}
		b := consoleBlock{line: i}
		i++
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			if !strings.HasPrefix(lines[i], "$ ") {
				if len(b.commands) == 0 {
					return nil, fmt.Errorf("line %d: output before the first command of the console block", i+1)
				}
				continue
			}
			c := readmeCommand{line: i}
			text := strings.TrimPrefix(lines[i], "$ ")
			for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
				i++
				text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
			}
			args, err := shellWords(text)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", c.line+1, err)
			}
			c.text, c.args, c.outStart = text, args, i+1
			if n := len(b.commands); n > 0 {
				b.commands[n-1].outEnd = c.line
			}
			b.commands = append(b.commands, c)
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: console block not closed", b.line+1)
		}
		if len(b.commands) == 0 {
			return nil, fmt.Errorf("line %d: console block without a command", b.line+1)
		}
		b.commands[len(b.commands)-1].outEnd = i
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// shellWords splits a command line as a shell would, for the subset the
// README uses: words, single and double quotes, backslash escapes. Pipes,
// redirections, variables and globs are refused: the test does not run a
// shell, so it must not pretend to.
func shellWords(s string) ([]string, error) {
	if strings.TrimSpace(s) == "echo $?" {
		return []string{"echo", "$?"}, nil
	}
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(s[i+1:], ch)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c quote in %q", ch, s)
			}
			quoted := s[i+1 : i+1+end]
			if ch == '"' && strings.ContainsAny(quoted, "$`\\") {
				return nil, fmt.Errorf("%q: $, ` and \\ inside double quotes are not supported", s)
			}
			cur.WriteString(quoted)
			inWord = true
			i += end + 1
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`*?[]{}~#", ch) >= 0:
			return nil, fmt.Errorf("%q: %c needs a shell; README commands are run without one", s, ch)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// execute runs the command and returns its output lines, without trailing
// spaces or trailing blank lines, and its exit code. last is the exit code
// of the command before it (-1 for none).
func (c readmeCommand) execute(t *testing.T, last int) ([]string, int, error) {
	t.Helper()
	switch {
	case len(c.args) == 2 && c.args[0] == "echo" && c.args[1] == "$?":
		if last < 0 {
			return nil, 0, fmt.Errorf("echo $? with no command before it")
		}
		return []string{strconv.Itoa(last)}, 0, nil
	case len(c.args) >= 2 && c.args[0] == "kubectl" && c.args[1] == "svctrace":
		out, stderr, code := run(t, c.args[2:]...)
		return trimLines(strings.Split(out+stderr, "\n")), code, nil
	}
	return nil, 0, fmt.Errorf("%q: the README test runs only \"kubectl svctrace …\" and \"echo $?\"", c.text)
}

// linkedScratch makes a directory whose entries are symbolic links to the
// entries of top (but .git).
func linkedScratch(t *testing.T, top string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(top)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(top, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func trimLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func isElision(line string) bool { return strings.TrimSpace(line) == "..." }
