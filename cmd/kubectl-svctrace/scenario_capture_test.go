package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// capture is one line of the capture section: a named starting point.
type capture struct {
	name string
	pos  string
	// A capture directory's dump: DIR/NODE.iptables-save.txt or
	// DIR/NODE.nft.json, with DIR/objects.yaml.
	dumpFile string
	// Or a snapshot file, the node in it and the dump to edit
	// (COLLECTOR or COLLECTOR@BACKEND).
	snapshot, node, dump string
}

func (sc *scenario) parseCaptures() error {
	data, ok := sc.section("capture")
	if !ok {
		return fmt.Errorf("%s: the capture section is missing", sc.file)
	}
	for i, l := range strings.Split(data, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		c := capture{name: f[0], pos: fmt.Sprintf("%s:%d", sc.file, sc.line["capture"]+i)}
		switch {
		case len(f) == 2 && (strings.HasSuffix(f[1], ".iptables-save.txt") || strings.HasSuffix(f[1], ".nft.json")):
			c.dumpFile = f[1]
		case len(f) == 4 && strings.HasSuffix(f[1], ".snapshot.yaml"):
			c.snapshot, c.node, c.dump = f[1], f[2], f[3]
		default:
			return fmt.Errorf("%s: %q: want NAME DIR/NODE.iptables-save.txt, NAME DIR/NODE.nft.json or NAME FILE.snapshot.yaml NODE COLLECTOR[@BACKEND]", c.pos, l)
		}
		for _, o := range sc.captures {
			if o.name == c.name {
				return fmt.Errorf("%s: capture %s is named twice", c.pos, c.name)
			}
		}
		sc.captures = append(sc.captures, c)
	}
	if len(sc.captures) == 0 {
		return fmt.Errorf("%s:%d: the capture section names no capture", sc.file, sc.line["capture"])
	}
	return nil
}

// load reads the capture into a snapshot: a capture directory's files
// through collect, as a user imports them, or a snapshot file as it is.
func (sc *scenario) load(t *testing.T, c capture) (*snapshot.Snapshot, error) {
	if c.snapshot != "" {
		s, err := snapshot.Load(filepath.Join(repoRoot, c.snapshot))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.pos, err)
		}
		return s, nil
	}
	dir, file := filepath.Split(filepath.Join(repoRoot, c.dumpFile))
	node := c.nodeName()
	flag := "--iptables-save"
	if strings.HasSuffix(file, ".nft.json") {
		flag = "--nft-json"
	}
	snap := filepath.Join(t.TempDir(), "capture.snapshot.yaml")
	_, stderr, code := run(t, "collect", "--node", node, "--objects", filepath.Join(dir, "objects.yaml"), flag, filepath.Join(dir, file), "-f", snap)
	if code != 0 {
		return nil, fmt.Errorf("%s: collect: exit %d: %s", c.pos, code, stderr)
	}
	s, err := snapshot.Load(snap)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.pos, err)
	}
	return s, nil
}

// editRules applies the rules.edit section to the capture's dump.
func (sc *scenario) editRules(s *snapshot.Snapshot, c capture, section, data string) error {
	edits, err := parseRuleEdits(sc.file, sc.line[section], data)
	if err != nil {
		return err
	}
	d, err := c.dumpOf(s)
	if err != nil {
		return err
	}
	var text string
	if d.Collector == "nft-json" {
		text, err = editNFT(d.Text, edits)
	} else {
		text, err = editIPTables(d.Text, edits)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", c.name, err)
	}
	if text == d.Text {
		return fmt.Errorf("%s:%d: the edits of capture %s change nothing", sc.file, sc.line[section], c.name)
	}
	d.Text = text
	return nil
}

// nodeName is the node the capture is about.
func (c capture) nodeName() string {
	if c.dumpFile == "" {
		return c.node
	}
	node, _, _ := strings.Cut(filepath.Base(c.dumpFile), ".")
	return node
}

// dumpOf finds the dump the capture's rule edits apply to.
func (c capture) dumpOf(s *snapshot.Snapshot) (*snapshot.Dump, error) {
	node, want := c.nodeName(), c.dump
	if c.dumpFile != "" {
		want = "iptables-save"
		if strings.HasSuffix(c.dumpFile, ".nft.json") {
			want = "nft-json"
		}
	}
	collector, backend, _ := strings.Cut(want, "@")
	for i := range s.Nodes {
		if s.Nodes[i].Name != node {
			continue
		}
		var hits []*snapshot.Dump
		for j := range s.Nodes[i].Dumps {
			d := &s.Nodes[i].Dumps[j]
			if d.Collector == collector && (backend == "" || d.Backend == backend) {
				hits = append(hits, d)
			}
		}
		if len(hits) != 1 {
			return nil, fmt.Errorf("%s: node %s has %d %s dumps, want exactly one (name the backend: %s@nf_tables or %s@legacy)", c.pos, node, len(hits), want, collector, collector)
		}
		return hits[0], nil
	}
	return nil, fmt.Errorf("%s: the capture has no node %s", c.pos, node)
}
