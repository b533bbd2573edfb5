package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines keeps the README to what a newcomer reads: what svctrace
// is, the two commands, install, five examples and where to read more.
const maxReadmeLines = 250

func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, over %d: move the detail into docs/", n, maxReadmeLines)
	}
	if n := strings.Count(string(b), "```console"); n != 5 {
		t.Errorf("README.md has %d examples (```console blocks), not five", n)
	}
}

// mdLink is a markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// machinePath is a path of some machine rather than of the repository.
var machinePath = regexp.MustCompile(`(^|[\s(\x60'"])/(work|root|home|Users|tmp/[A-Za-z0-9]+-[0-9])/`)

// TestDocLinks: every relative link of the project's markdown leads to a
// file of the repository, and to a heading of it where it names one; no
// document cites a path of the machine it was written on.
func TestDocLinks(t *testing.T) {
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	err = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		rel, _ := filepath.Rel(top, doc)
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for i, line := range strings.Split(text, "\n") {
			if machinePath.MatchString(line) {
				t.Errorf("%s:%d cites a path of a machine: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			tb, err := os.ReadFile(path)
			if err != nil {
				if st, serr := os.Stat(path); serr == nil && st.IsDir() {
					continue
				}
				t.Errorf("%s: link %s: %v", rel, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !hasAnchor(string(tb), anchor) {
				t.Errorf("%s: link %s: no heading of that anchor", rel, target)
			}
		}
	}
}

// fence and codeSpan are markdown's code, whose brackets are no links.
var (
	fence    = regexp.MustCompile("(?ms)^```.*?^```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

func withoutCode(s string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(s, ""), "")
}

// hasAnchor: doc has a heading whose GitHub anchor is anchor (lower case,
// spaces as hyphens, punctuation dropped).
func hasAnchor(doc, anchor string) bool {
	for _, line := range strings.Split(doc, "\n") {
		h := strings.TrimLeft(line, "#")
		if len(h) == len(line) || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
