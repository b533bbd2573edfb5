package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// Load reads a whole Snapshot from a file in the binary format (see
// binary.go), YAML or JSON, checking its version. The format is told by
// the file's first bytes, not its name.
func Load(path string) (*Snapshot, error) {
	s, ok, err := loadBinary(path, nil)
	if ok || err != nil {
		return s, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	s, err = Decode(data)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return s, nil
}

// Decode reads a Snapshot: a binary snapshot when data starts with its
// magic (IsBinary), else a YAML or JSON document.
func Decode(data []byte) (*Snapshot, error) {
	if IsBinary(data) {
		return decodeBinary(memSource(data))
	}
	if len(data) > 0 && len(data) < len(binaryMagic) && strings.HasPrefix(binaryMagic, string(data)) {
		return nil, fmt.Errorf("truncated file: its %d bytes are the start of a binary snapshot's magic, and nothing more", len(data))
	}
	if looksBinary(data) {
		return nil, errors.New("not a snapshot: binary data that does not start with the magic of a binary snapshot (damaged, or not a svctrace file)")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file, not a snapshot")
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a snapshot document (damaged or truncated?): %v", describeDecodeError(data, reflect.TypeOf(head), err))
	}
	if head.Kind != Kind {
		return nil, fmt.Errorf("kind is %q, want %q", head.Kind, Kind)
	}
	if head.APIVersion != APIVersion {
		return nil, fmt.Errorf("apiVersion %q is not supported by this svctrace (it reads %s)", head.APIVersion, APIVersion)
	}
	var s Snapshot
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, describeDecodeError(data, reflect.TypeOf(s), err)
	}
	if err := checkNodes(&s); err != nil {
		return nil, err
	}
	if err := checkObjects(s.Cluster); err != nil {
		return nil, err
	}
	return &s, nil
}

// checkNodes refuses node states without a name or a dump without a
// collector.
func checkNodes(s *Snapshot) error {
	for i, n := range s.Nodes {
		if n.Name == "" {
			return fmt.Errorf("damaged snapshot: nodes[%d] has no name", i)
		}
		for j, d := range n.Dumps {
			if d.Collector == "" {
				return fmt.Errorf("damaged snapshot: nodes[%d] (%s) dumps[%d] has no collector", i, n.Name, j)
			}
		}
	}
	return nil
}

// BinaryExt is the file name extension of the binary snapshot format.
const BinaryExt = ".snap"

// Encode writes a snapshot in the format its name asks for (see format):
// the binary one unless the name ends in .json, .yaml or .yml, or is empty
// (standard output). A partially loaded snapshot (Cluster.Partial set)
// is refused: it would be saved as if it were whole.
func Encode(s *Snapshot, name string) ([]byte, error) {
	if s.Cluster != nil && s.Cluster.Partial != nil {
		return nil, errors.New("the snapshot was loaded in part (for some Services only); load it whole to write it")
	}
	switch format(name) {
	case "json":
		return jsonIndent(s)
	case "yaml":
		return yaml.Marshal(s)
	}
	return encodeBinary(s)
}

// format is the format a snapshot file is written in, by its name: JSON
// for .json, YAML for .yaml or .yml and for standard output (no name), the
// binary format (BinaryExt, fast to load and to load in part) otherwise.
func format(name string) string {
	switch {
	case strings.HasSuffix(name, ".json"):
		return "json"
	case name == "", strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
		return "yaml"
	}
	return "binary"
}

// Save writes a snapshot to path, through a temporary file so a failed
// write leaves no half snapshot behind.
func Save(s *Snapshot, path string) error {
	data, err := Encode(s, path)
	if err != nil {
		return fmt.Errorf("encoding snapshot: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return nil
}

// Merge adds the nodes of next to prev, replacing nodes of the same name;
// the API objects of next win when it has them (they are the newer).
func Merge(prev, next *Snapshot) *Snapshot {
	out := *prev
	out.Nodes = nil
	replaced := map[string]bool{}
	for _, n := range next.Nodes {
		replaced[n.Name] = true
	}
	for _, n := range prev.Nodes {
		if !replaced[n.Name] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	out.Nodes = append(out.Nodes, next.Nodes...)
	if next.Cluster != nil {
		out.Cluster = next.Cluster
	}
	out.Metadata.CreationTimestamp = next.Metadata.CreationTimestamp
	out.Metadata.Notes = nil
	seen := map[string]bool{}
	for _, n := range append(append([]string(nil), prev.Metadata.Notes...), next.Metadata.Notes...) {
		if !seen[n] {
			seen[n] = true
			out.Metadata.Notes = append(out.Metadata.Notes, n)
		}
	}
	return &out
}
