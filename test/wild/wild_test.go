// Package wild checks svctrace against the corpus of real published dumps
// in testdata/wild (issue 33): each dump is imported as a ticket's
// attachment would be, and explain's answer for every frontend is held
// to the expectation written by hand from the dump (expect.yaml, beside
// each dump's source note). A dump svctrace does not read right yet is
// listed there as a gap, with why.
package wild

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
)

var show = flag.Bool("show", false, "log each dump's answer as expect.yaml would hold it (to check by hand)")

var update = flag.Bool("update", false, "write the answers of dumps without an expectation into expect.yaml, to be checked by hand")

const dir = "../../testdata/wild"

// entry is one dump's expectation.
type entry struct {
	Dump string `json:"dump"`
	// Gap says why svctrace does not answer for the dump yet; the dump
	// must still import or be refused without a panic.
	Gap string `json:"gap,omitempty"`
	// Frontends are, per frontend ("Kind ip:port/PROTO"), the answer
	// per source class: pod, node, outside.
	Frontends map[string]map[string]string `json:"frontends,omitempty"`
	// Findings are the drift findings, by type, that the dump proves.
	Findings []string `json:"findings,omitempty"`
	// Excerpt: import the dump as an excerpt cut by hand (--excerpt), as
	// its source note says it is.
	Excerpt bool `json:"excerpt,omitempty"`
}

// TestWildDumps: every dump of the corpus is listed in expect.yaml, and
// each one with an expectation gets exactly that answer.
func TestWildDumps(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil && !*update {
		t.Fatal(err)
	}
	var entries []entry
	if err := yaml.UnmarshalStrict(raw, &entries); err != nil {
		t.Fatalf("expect.yaml: %v", err)
	}
	listed := map[string]*entry{}
	for i := range entries {
		listed[entries[i].Dump] = &entries[i]
	}
	dumps, err := dumpFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(dumps) < 30 {
		t.Fatalf("%d dumps in %s: the corpus is gone", len(dumps), dir)
	}
	changed := false
	for _, d := range dumps {
		e := listed[d]
		t.Run(d, func(t *testing.T) {
			got, findings, err := answer(d, e != nil && e.Excerpt)
			if *show {
				out, _ := yaml.Marshal([]entry{{Dump: d, Frontends: got, Findings: findings, Excerpt: e != nil && e.Excerpt}})
				t.Logf("answer (error %v):\n%s", err, out)
			}
			switch {
			case e == nil && *update:
				ne := entry{Dump: d, Frontends: got, Findings: findings}
				if err != nil {
					ne = entry{Dump: d, Gap: "not read: " + err.Error()}
				}
				entries = append(entries, ne)
				changed = true
			case e == nil:
				t.Errorf("%s is not in expect.yaml", d)
			case e.Gap != "":
				t.Logf("gap: %s (answer: %v, %v)", e.Gap, got, err)
			case err != nil:
				t.Errorf("not read: %v", err)
			default:
				compare(t, e, got, findings)
			}
		})
	}
	if changed {
		sort.Slice(entries, func(i, j int) bool { return entries[i].Dump < entries[j].Dump })
		out, err := yaml.Marshal(entries)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "expect.yaml"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func compare(t *testing.T, e *entry, got map[string]map[string]string, findings []string) {
	t.Helper()
	for f, want := range e.Frontends {
		g, ok := got[f]
		if !ok {
			t.Errorf("%s: not explained (frontends: %v)", f, keys(got))
			continue
		}
		for class, w := range want {
			if g[class] != w {
				t.Errorf("%s from %s: %q, want %q", f, class, g[class], w)
			}
		}
	}
	for f := range got {
		if _, ok := e.Frontends[f]; !ok {
			t.Errorf("%s: explained, but not a frontend the dump shows", f)
		}
	}
	if !slices.Equal(findings, e.Findings) {
		t.Errorf("findings %v, want %v", findings, e.Findings)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dumpFiles are the corpus' dumps: every file but the notes.
func dumpFiles() ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if de.IsDir() || strings.HasSuffix(n, ".source.yaml") || n == "README.md" || n == "expect.yaml" {
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// answer imports a dump as its format asks and explains every frontend.
func answer(name string, excerpt bool) (map[string]map[string]string, []string, error) {
	a, err := analyse(name, excerpt)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]map[string]string{}
	for _, f := range a.Observed.Frontends {
		m := map[string]string{}
		for class, label := range map[behavior.SourceClass]string{behavior.FromPod: "pod", behavior.FromNode: "node", behavior.FromExternal: "outside"} {
			m[label] = summary(f.Outcomes[class])
		}
		out[f.Key.String()] = m
	}
	var findings []string
	for _, f := range a.Findings {
		findings = append(findings, f.Type)
	}
	sort.Strings(findings)
	return out, findings, nil
}

// analyse imports a dump as its format asks and analyses the node.
func analyse(name string, excerpt bool) (*analysis.NodeAnalysis, error) {
	path := filepath.Join(dir, name)
	o := inspect.ImportOptions{Node: "node1", Now: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Generator: "test/wild", Excerpt: excerpt, Files: map[string][]string{}}
	family := "IPv4"
	switch filepath.Ext(name) {
	case ".iptables-save", ".iptables-S", ".iptables-L", ".iptables-L-v", ".nft":
		o.Files["iptables-save"] = []string{path}
	case ".ip6tables-save":
		o.Files["ip6tables-save"] = []string{path}
		family = "IPv6"
	case ".ipvsadm":
		o.Files["ipvsadm"] = []string{path}
	case ".ipset-list", ".ipset-save":
		o.Files["ipset"] = []string{path}
	case ".ip-addr":
		o.Files["kube-ipvs0"] = []string{path}
	default:
		return nil, fmt.Errorf("no importer for %s", filepath.Ext(name))
	}
	s, err := inspect.Import(o)
	if err != nil {
		return nil, err
	}
	return analysis.Analyze(s, "node1", family)
}

// summary is an outcome in one line: the verdict, each backend with its
// share, and masquerading.
func summary(o behavior.Outcome) string {
	var b strings.Builder
	b.WriteString(string(o.Verdict))
	for _, be := range o.Backends {
		fmt.Fprintf(&b, " %s=%.4g", be.Endpoint, be.Probability)
	}
	if o.Verdict == behavior.Forward && o.Masquerade {
		b.WriteString(" masqueraded")
	}
	if o.Reason != "" {
		b.WriteString(": " + o.Reason)
	}
	return b.String()
}
