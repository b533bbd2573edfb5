package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"go.yaml.in/yaml/v3"
)

// TestREADMEFailures keeps docs/findings.md's "Failures svctrace catches" in
// step with the cases that prove it: every lab case of
// test/e2e/testdata/failures.yaml is a line of the section with each of
// its upstream links, and every scenario file the section names exists.
func TestREADMEFailures(t *testing.T) {
	sec := readmeSection(t, "docs/findings.md", "## Failures svctrace catches")
	b, err := os.ReadFile("../../test/e2e/testdata/failures.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name  string   `yaml:"name"`
		Links []string `yaml:"links"`
	}
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("test/e2e/testdata/failures.yaml holds no case")
	}
	lines := strings.Split(sec, "\n")
	for _, c := range cases {
		i := slicesIndex(lines, "lab `"+c.Name+"`")
		if i < 0 {
			t.Errorf("lab case %s is not in docs/findings.md's section", c.Name)
			continue
		}
		for _, l := range c.Links {
			if !strings.Contains(lines[i], "("+l+")") {
				t.Errorf("docs/findings.md's line of lab case %s lacks its link %s", c.Name, l)
			}
		}
	}
	for _, m := range regexp.MustCompile("`([a-z0-9-]+\\.txtar)`").FindAllStringSubmatch(sec, -1) {
		if _, err := os.Stat(filepath.Join("../../testdata/scenarios", m[1])); err != nil {
			t.Errorf("docs/findings.md names scenario %s: %v", m[1], err)
		}
	}
}

// slicesIndex is the first line holding s, -1 for none.
func slicesIndex(lines []string, s string) int {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// TestREADMEFindings: the table of findings (docs/findings.md) names
// every finding type svctrace reports.
func TestREADMEFindings(t *testing.T) {
	sec := readmeSection(t, "docs/findings.md", "## Findings")
	for _, typ := range behavior.FindingTypes {
		if !regexp.MustCompile(`(?m)^\| ([A-Za-z]+ / )?` + typ + `( / [A-Za-z]+)? \|`).MatchString(sec) {
			t.Errorf("docs/findings.md's table of findings lacks %s", typ)
		}
	}
}

// readmeSection is the section of doc (a path from the top of the
// repository) under heading ("## Title"), up to the next heading of its
// level.
func readmeSection(t *testing.T, doc, heading string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, heading)
	}
	level, _, _ := strings.Cut(heading, " ")
	sec, _, _ = strings.Cut(sec, "\n"+level+" ")
	return sec
}
