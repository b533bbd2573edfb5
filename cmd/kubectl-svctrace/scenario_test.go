package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	"golang.org/x/tools/txtar"
)

// repoRoot is where the paths in a scenario's capture section start.
const repoRoot = "../.."

// TestScenarios runs every case of testdata/scenarios (see its README):
// each capture it names is loaded, edited, and given to the command; the
// output and exit code must be the ones written down. With -update the
// want and exit sections are rewritten from the real output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "scenarios", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata/scenarios")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			sc, err := readScenario(path)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]scenarioResult{}
			for _, c := range sc.captures {
				t.Run(c.name, func(t *testing.T) {
					r, err := sc.run(t, c)
					if err != nil {
						t.Fatal(err)
					}
					got[c.name] = r
					if *update {
						return
					}
					want, err := sc.want(c.name)
					if err != nil {
						t.Fatal(err)
					}
					if r.exit != want.exit {
						t.Errorf("%s: exit %d, want %d", sc.file, r.exit, want.exit)
					}
					if r.output != want.output {
						t.Errorf("%s: output differs (go test -run TestScenarios -update rewrites it); got:\n%s", sc.file, r.output)
					}
				})
			}
			if *update && len(got) == len(sc.captures) {
				if err := sc.rewrite(path, got); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// scenario is one parsed testdata/scenarios/*.txtar file.
type scenario struct {
	file     string // as named in messages: testdata/scenarios/NAME.txtar
	archive  *txtar.Archive
	line     map[string]int // line of each section's first data line
	captures []capture
	args     []string
}

type scenarioResult struct {
	output string
	exit   int
}

func readScenario(path string) (*scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := &scenario{file: filepath.ToSlash(strings.TrimPrefix(path, repoRoot+"/")), archive: txtar.Parse(data), line: map[string]int{}}
	if !strings.HasPrefix(sc.file, "testdata/") {
		sc.file = path
	}
	if strings.TrimSpace(string(sc.archive.Comment)) == "" {
		return nil, fmt.Errorf("%s: the header comment saying what the case is about is missing", sc.file)
	}
	n := 1 + strings.Count(string(sc.archive.Comment), "\n")
	for _, f := range sc.archive.Files {
		if _, dup := sc.line[f.Name]; dup {
			return nil, fmt.Errorf("%s:%d: section %s appears twice", sc.file, n, f.Name)
		}
		sc.line[f.Name] = n + 1
		n += 1 + strings.Count(string(f.Data), "\n")
	}
	if err := sc.parseCaptures(); err != nil {
		return nil, err
	}
	cmd, ok := sc.section("cmd")
	if !ok || len(strings.Fields(cmd)) == 0 {
		return nil, fmt.Errorf("%s: the cmd section is missing or empty", sc.file)
	}
	sc.args = strings.Fields(cmd)
	if slices.Contains(sc.args, "--snapshot") {
		return nil, fmt.Errorf("%s:%d: cmd: leave --snapshot out, the runner gives it", sc.file, sc.line["cmd"])
	}
	return sc, sc.checkSections()
}

func (sc *scenario) section(name string) (string, bool) {
	for _, f := range sc.archive.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// checkSections refuses a section the runner would not read, so that a
// misspelt name cannot leave an edit or an expectation unused.
func (sc *scenario) checkSections() error {
	for _, f := range sc.archive.Files {
		switch f.Name {
		case "capture", "cmd", "objects.patch", "rules.edit", "want", "exit":
			continue
		}
		capName, scoped := "", false
		for _, p := range []string{"rules.edit.", "want.", "exit."} {
			if strings.HasPrefix(f.Name, p) {
				capName, scoped = strings.TrimPrefix(f.Name, p), true
			}
		}
		if !scoped {
			return fmt.Errorf("%s:%d: unknown section %s", sc.file, sc.line[f.Name]-1, f.Name)
		}
		if !slices.ContainsFunc(sc.captures, func(c capture) bool { return c.name == capName }) {
			return fmt.Errorf("%s:%d: section %s names no capture of this scenario", sc.file, sc.line[f.Name]-1, f.Name)
		}
	}
	return nil
}

// sectionFor returns the section NAME.CAPTURE, else NAME.
func (sc *scenario) sectionFor(name, capName string) (string, string, bool) {
	if d, ok := sc.section(name + "." + capName); ok {
		return name + "." + capName, d, true
	}
	d, ok := sc.section(name)
	return name, d, ok
}

func (sc *scenario) want(capName string) (scenarioResult, error) {
	_, out, ok := sc.sectionFor("want", capName)
	name, exit, okExit := sc.sectionFor("exit", capName)
	if !ok || !okExit {
		return scenarioResult{}, fmt.Errorf("%s: capture %s has no want or no exit section (go test -run TestScenarios -update writes them)", sc.file, capName)
	}
	code, err := strconv.Atoi(strings.TrimSpace(exit))
	if err != nil {
		return scenarioResult{}, fmt.Errorf("%s:%d: %s: want the exit code, a number", sc.file, sc.line[name], name)
	}
	return scenarioResult{output: out, exit: code}, nil
}

// run loads the capture, applies the scenario's edits and runs its
// command on the result.
func (sc *scenario) run(t *testing.T, c capture) (scenarioResult, error) {
	s, err := sc.load(t, c)
	if err != nil {
		return scenarioResult{}, err
	}
	if data, ok := sc.section("objects.patch"); ok {
		if s.Cluster, err = editObjects(s.Cluster, sc.file, sc.line["objects.patch"], data); err != nil {
			return scenarioResult{}, err
		}
	}
	if name, data, ok := sc.sectionFor("rules.edit", c.name); ok {
		if err := sc.editRules(s, c, name, data); err != nil {
			return scenarioResult{}, err
		}
	}
	snap := filepath.Join(t.TempDir(), "scenario.snapshot.yaml")
	if err := snapshot.Save(s, snap); err != nil {
		return scenarioResult{}, err
	}
	args := make([]string, len(sc.args))
	for i, a := range sc.args {
		args[i] = strings.ReplaceAll(a, "$NODE", c.nodeName())
	}
	stdout, stderr, code := run(t, append(args, "--snapshot", snap)...)
	out := strings.ReplaceAll(stdout+stderr, snap, "SNAPSHOT")
	return scenarioResult{output: out, exit: code}, nil
}

// rewrite writes the real results into the want and exit sections: one
// want for the output most captures give, a want.CAPTURE for each other.
func (sc *scenario) rewrite(path string, got map[string]scenarioResult) error {
	count := map[scenarioResult]int{}
	var common scenarioResult
	for _, c := range sc.captures {
		count[got[c.name]]++
		if count[got[c.name]] > count[common] {
			common = got[c.name]
		}
	}
	var files []txtar.File
	for _, f := range sc.archive.Files {
		if base, _, _ := strings.Cut(f.Name, "."); base != "want" && base != "exit" {
			files = append(files, f)
		}
	}
	files = append(files, txtar.File{Name: "want", Data: []byte(common.output)})
	for _, c := range sc.captures {
		if r := got[c.name]; r.output != common.output {
			files = append(files, txtar.File{Name: "want." + c.name, Data: []byte(r.output)})
		}
	}
	files = append(files, txtar.File{Name: "exit", Data: []byte(strconv.Itoa(common.exit) + "\n")})
	for _, c := range sc.captures {
		if r := got[c.name]; r.exit != common.exit {
			files = append(files, txtar.File{Name: "exit." + c.name, Data: []byte(strconv.Itoa(r.exit) + "\n")})
		}
	}
	sc.archive.Files = files
	return os.WriteFile(path, txtar.Format(sc.archive), 0o644)
}
