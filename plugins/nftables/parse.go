package nftables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Parse reads the JSON form of `nft -j list ruleset` (or of `nft -j list
// table ...`), or the text form of `nft list ruleset` (parseText, which
// reads it into the same objects). source names the input in errors and
// notes.
// Malformed input gives an error naming the position (a JSON path such as
// nftables[17].rule.expr[2]); expressions the parser does not know are
// kept and reported in Notes.
func Parse(source string, data []byte) (*Ruleset, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("nftables: %s: empty input; want the output of `nft -j list ruleset`", source)
	}
	if trimmed[0] != '{' {
		if isTextForm(trimmed) {
			return parseText(source, data)
		}
		return nil, fmt.Errorf("nftables: %s: not JSON (starts with %q); want the output of `nft -j list ruleset`", source, head(trimmed))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, jsonError(source, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("nftables: %s: unexpected data after the JSON document at byte %d", source, dec.InputOffset())
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("nftables: %s: top level is not a JSON object", source)
	}
	list, ok := top["nftables"].([]any)
	if !ok {
		return nil, fmt.Errorf("nftables: %s: no \"nftables\" array at the top level; want the output of `nft -j list ruleset`", source)
	}
	p := &parser{rs: &Ruleset{Source: source}, tables: map[string]*Table{}}
	for i, item := range list {
		p.at = i
		if err := p.object(item, fmt.Sprintf("nftables[%d]", i)); err != nil {
			return nil, fmt.Errorf("nftables: %s: %w", source, err)
		}
	}
	for _, t := range p.rs.Tables {
		for _, s := range t.Sets {
			s.buildIndex()
		}
	}
	return p.rs, nil
}

func isTextForm(b []byte) bool {
	for _, w := range []string{"table ", "chain ", "flush ruleset", "add table ", "#"} {
		if bytes.HasPrefix(b, []byte(w)) {
			return true
		}
	}
	// A paste that starts with the shell prompt of the command.
	return bytes.Contains(b, []byte("\ntable "))
}

func head(b []byte) string {
	if len(b) > 20 {
		b = b[:20]
	}
	return string(b)
}

// jsonError turns a decoding error into one that names the position.
func jsonError(source string, data []byte, err error) error {
	return jsonErrorAt(source, data, 0, err)
}

// jsonErrorAt is jsonError for the decoding of a part of data that starts
// at byte base.
func jsonErrorAt(source string, data []byte, base int64, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off := base + se.Offset
		line, col := lineCol(data, off)
		return fmt.Errorf("nftables: %s: invalid JSON at line %d, column %d (byte %d): %w", source, line, col, off, err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("nftables: %s: JSON ends early, at byte %d, inside an unclosed object or array (truncated input?): %w", source, len(data), io.ErrUnexpectedEOF)
	case errors.As(err, &te):
		return fmt.Errorf("nftables: %s: invalid JSON at byte %d: %w", source, base+te.Offset, err)
	}
	return fmt.Errorf("nftables: %s: invalid JSON: %w", source, err)
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

type parser struct {
	rs     *Ruleset
	tables map[string]*Table
	// at is the index of the element being read.
	at int
	// elems, when not nil, are the elements of the set being read, taken
	// from its text by a narrow read (plainElems); its "elem" is null.
	elems []*Element
	// lastSet is the set or map read last, in lastTable.
	lastSet   *Set
	lastTable *Table
}

func (p *parser) note(family, format string, args ...any) {
	p.rs.Notes = append(p.rs.Notes, Note{Family: family, Text: p.rs.Source + ": " + fmt.Sprintf(format, args...), at: p.at})
}

// object reads one element of the top-level array.
func (p *parser) object(item any, path string) error {
	kind, body, err := single(item, path)
	if err != nil {
		return err
	}
	path += "." + kind
	switch kind {
	case "metainfo":
		m, _ := body.(map[string]any)
		p.rs.Version, _ = m["version"].(string)
		if n, ok := m["json_schema_version"].(json.Number); ok {
			v, _ := n.Int64()
			p.rs.SchemaVersion = int(v)
		}
		return nil
	case "table":
		return p.table(body, path)
	case "chain":
		return p.chain(body, path)
	case "rule":
		return p.rule(body, path)
	case "set", "map":
		return p.set(body, path, kind == "map")
	case "counter":
		return p.counter(body, path)
	}
	m, ok := body.(map[string]any)
	if !ok {
		p.note("", "%s: %s object kept without being read", path, kind)
		return nil
	}
	t, err := p.owner(m, path)
	if err != nil {
		return err
	}
	name, _ := m["name"].(string)
	h, _ := optInt(m, "handle", path)
	t.Objects = append(t.Objects, Object{Kind: kind, Name: name, Handle: int(h)})
	p.note(t.Family, "%s: %s %q in table %s kept; the walk does not evaluate it", path, kind, name, t.ID())
	return nil
}

// single reads a JSON object with exactly one key.
func single(v any, path string) (string, any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("%s: want an object with one key, got %s", path, jsonType(v))
	}
	if len(m) != 1 {
		return "", nil, fmt.Errorf("%s: want an object with one key, got %d keys", path, len(m))
	}
	for k, b := range m {
		return k, b, nil
	}
	return "", nil, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// owner finds (or creates) the table an object belongs to.
func (p *parser) owner(m map[string]any, path string) (*Table, error) {
	fam, err := reqStr(m, "family", path)
	if err != nil {
		return nil, err
	}
	name, err := reqStr(m, "table", path)
	if err != nil {
		return nil, err
	}
	return p.tableFor(fam, name), nil
}

func (p *parser) tableFor(fam, name string) *Table {
	key := fam + " " + name
	if t, ok := p.tables[key]; ok {
		return t
	}
	t := &Table{Family: fam, Name: name, chains: map[string]*Chain{}, sets: map[string]*Set{}}
	p.tables[key] = t
	p.rs.Tables = append(p.rs.Tables, t)
	return t
}

func reqStr(m map[string]any, key, path string) (string, error) {
	v, ok := m[key]
	if !ok {
		return "", fmt.Errorf("%s: missing %q", path, key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s: want a string, got %s", path, key, jsonType(v))
	}
	return s, nil
}

func optStr(m map[string]any, key, path string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s: want a string, got %s", path, key, jsonType(v))
	}
	return s, nil
}

func optInt(m map[string]any, key, path string) (int64, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, nil
	}
	return toInt(v, path+"."+key)
}

func toInt(v any, path string) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: want a number, got %s", path, jsonType(v))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s: want an integer, got %s", path, n)
	}
	return i, nil
}

// strList reads a string or an array of strings.
func strList(v any, path string) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: want a string, got %s", path, i, jsonType(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want a string or an array of strings, got %s", path, jsonType(v))
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return strings.TrimSpace(s)
}
