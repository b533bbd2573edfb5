package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// TestPlanesDeclare lists what every plane declares, and keeps the table
// of docs/architecture.md ("What each plane declares") equal to it: a new
// plane is its package and its line in Loaders, and what it reads follows
// from its declarations.
func TestPlanesDeclare(t *testing.T) {
	var rows []string
	flags, collectors := map[string]bool{}, map[string]bool{}
	add := func(mode string, k dataplane.DumpKind) {
		if k.Collector == "" || k.Flag == "" || k.Help == "" {
			t.Errorf("%s declares a dump without a collector, flag or help: %+v", mode, k)
		}
		if flags[k.Flag] || collectors[k.Collector] {
			t.Errorf("%s declares %s (--%s) again", mode, k.Collector, k.Flag)
		}
		flags[k.Flag], collectors[k.Collector] = true, true
		var tools []string
		for _, tool := range k.Tools {
			if len(tool.Argv) == 0 || tool.What == "" {
				t.Errorf("%s: a tool of %s lacks its command or what it reads", mode, k.Collector)
			}
			tools = append(tools, "`"+strings.Join(tool.Argv, " ")+"`")
		}
		if len(tools) == 0 {
			tools = []string{"(netlink)"}
		}
		fam := k.Family
		if fam == "" {
			fam = "both"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | `--%s` |", mode, k.Collector, fam, strings.Join(tools, ", "), k.Flag))
	}
	for _, l := range Loaders() {
		d, ok := l.(dataplane.Declarer)
		if !ok {
			t.Errorf("plane %s declares no dumps (dataplane.Declarer)", l.Mode())
			continue
		}
		for _, k := range d.Dumps() {
			add(l.Mode(), k)
		}
	}
	all := Dumps()
	add("(no plane)", all[len(all)-1])
	if len(all) != len(rows) {
		t.Errorf("Dumps lists %d kinds, the planes declare %d", len(all), len(rows))
	}
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## What each plane declares\n")
	if !ok {
		t.Fatal("docs/architecture.md has no section \"What each plane declares\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	sec, traits, _ := strings.Cut(sec, "\n### ")
	checkTraits(t, traits)
	for _, r := range rows {
		if !strings.Contains(sec, "\n"+r+"\n") {
			t.Errorf("docs/architecture.md's table lacks the row\n%s", r)
		}
	}
	if n := strings.Count(sec, "\n| ") - 1; n != len(rows) { // less the header
		t.Errorf("docs/architecture.md's table has %d rows, the planes declare %d", n, len(rows))
	}
}

// TestArchitectureMap: docs/architecture.md's map names every package
// directory at the top of the module and under internal/, so that it says
// where each thing lives.
func TestArchitectureMap(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"..", "../internal"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" {
				continue
			}
			gos, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.go"))
			subs, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*", "*.go"))
			if len(gos)+len(subs) == 0 {
				continue
			}
			name := e.Name()
			if dir == ".." && !strings.Contains(string(doc), "\n"+name+"/") && !strings.Contains(string(doc), ", "+name+"/") {
				t.Errorf("docs/architecture.md's map lacks %s/", name)
			}
			if dir != ".." && !strings.Contains(string(doc), name) {
				t.Errorf("docs/architecture.md's map lacks internal/%s", name)
			}
		}
	}
}

// checkTraits keeps the traits table of docs/architecture.md (sec, from
// its heading on) equal to what each plane declares: one row per plane,
// naming every trait that departs from the zero value.
func checkTraits(t *testing.T, sec string) {
	t.Helper()
	if !strings.HasPrefix(sec, "Proxier traits\n") {
		t.Fatal("docs/architecture.md's section \"What each plane declares\" has no subsection \"Proxier traits\"")
	}
	rows := 0
	for _, l := range Loaders() {
		tr := l.(dataplane.Declarer).Traits()
		if tr.Mode != l.Mode() {
			t.Errorf("plane %s declares the traits of mode %q", l.Mode(), tr.Mode)
		}
		v := reflect.ValueOf(tr)
		var set []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Name == "Mode" || v.Field(i).IsZero() {
				continue
			}
			if f.Type.Kind() == reflect.Bool {
				set = append(set, "`"+f.Name+"`")
			} else {
				set = append(set, fmt.Sprintf("`%s`: %v", f.Name, v.Field(i).Interface()))
			}
		}
		if len(set) == 0 {
			set = []string{"(none: the behaviour assumed)"}
		}
		row := fmt.Sprintf("| %s | %s |", l.Mode(), strings.Join(set, ", "))
		if !strings.Contains(sec, "\n"+row+"\n") {
			t.Errorf("docs/architecture.md's traits table lacks the row\n%s", row)
		}
		rows++
	}
	if n := strings.Count(sec, "\n| ") - 1; n != rows {
		t.Errorf("docs/architecture.md's traits table has %d rows, the planes are %d", n, rows)
	}
}
