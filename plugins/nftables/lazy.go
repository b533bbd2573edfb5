package nftables

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"unsafe"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

var _ dataplane.NarrowLoader = Loader{}

// LoadNarrow reads the node's nftables dumps for an analysis narrowed to
// one Service: tables, chains, sets and maps are read at once, a chain's
// rules when something first reads them (a walk entering the chain, a
// check over the rules that may answer it). The answers are Load's; an
// error in rules read late is the plane's Err.
func (Loader) LoadNarrow(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	var p dataplane.Plane
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Collector != CollectorJSON {
			continue
		}
		if rs, ok := d.Parsed.(*Ruleset); ok {
			// Read in full already, from the kernel (ReadNetlink).
			if len(rs.Tables) == 0 || hasFamilyTables(rs, family) {
				p = NewPlane(rs, family)
			}
			continue
		}
		// The dump's text is only read, never written: no copy of it.
		text := unsafe.Slice(unsafe.StringData(d.Text), len(d.Text))
		rs, doc, facts, err := readNarrow(dataplane.Origin(ns.Name, d), text, d.Index)
		if err != nil {
			return nil, dataplane.NewDumpError(ns.Name, d, 0, 0, "", err)
		}
		if doc != nil {
			doc.wrap = func(err error) error { return dataplane.NewDumpError(ns.Name, d, 0, 0, "", err) }
		}
		if len(rs.Tables) == 0 || hasFamilyTables(rs, family) {
			pl := NewPlane(rs, family)
			pl.deferred = doc
			if f := facts.of(family); f != nil {
				pl.frontendsOnce.Do(func() { pl.frontends, pl.frontendNotes = f.frontends, f.notes })
			}
			p = pl
		}
	}
	return withIptablesNFT(p, ns, family), nil
}

// Err is the error of the dump once a rule a narrow read decoded late
// failed (Load's error for it); nil when none failed, and for a state
// read in full.
func (p *Plane) Err() error { return p.deferred.firstErr() }

// lazyDoc is a document read narrowly: its elements, and what decoding
// its chains' rules late found.
type lazyDoc struct {
	source string
	data   []byte
	elems  []rawElem
	// tables are the document's tables by "family name": complete after
	// the scan, only read after it.
	tables map[string]*Table
	// wrap says which node and dump an error is in.
	wrap func(error) error
	// last is the table of the chain or rule read last (while scanning).
	last *Table

	failed sync.Once
	mu     sync.Mutex
	err    error
	notes  []Note
	// given are the elements whose notes are in notes from the start
	// (a digest's): decoding them again adds none.
	given map[int]bool
}

// lazyRules are a chain's undecoded rules.
type lazyRules struct {
	doc *lazyDoc
	// elems are the indexes of the rules' elements, in input order.
	elems []int
	// marks are the marks of every rule's strings.
	marks ruleMarks
	once  sync.Once
}

// parseNarrow reads data as Parse does but leaves the rules undecoded
// (doc holds them). A document the scan is not certain of is parsed in
// full (doc is nil), which also gives the errors of malformed input.
func parseNarrow(source string, data []byte) (*Ruleset, *lazyDoc, error) {
	elems, ok := scanDocument(data)
	return parseScanned(source, data, elems, ok)
}

// parseScanned is parseNarrow with the elements scanDocument found in
// data (ok: it was certain of them).
func parseScanned(source string, data []byte, elems []rawElem, ok bool) (*Ruleset, *lazyDoc, error) {
	for i := 0; ok && i < len(elems); i++ {
		// An element the scan could not read (not an object with one
		// key, a key with an escape), or a rule whose family, table and
		// chain it could not: decoding it now could put it before rules
		// of its chain left for later.
		ok = elems[i].kind != "" && (elems[i].kind != "rule" || elems[i].plain)
	}
	if !ok {
		rs, err := Parse(source, data)
		return rs, nil, err
	}
	doc := &lazyDoc{source: source, data: data, elems: elems}
	p := &parser{rs: &Ruleset{Source: source}, tables: map[string]*Table{}}
	// The big sets' elements, read on other CPUs while the loop goes on.
	var pending []*lateElems
	for i := range elems {
		e := &elems[i]
		p.at = i
		switch {
		case e.kind == "rule" && e.plain:
			if c := doc.chainOf(p, e); c != nil {
				continue
			}
		case e.kind == "chain" && e.plain && !e.other:
			// What p.chain does with a body of family, table, name and
			// handle only.
			t := doc.last
			if t == nil || t.Family != e.family || t.Name != e.table {
				t = p.tableFor(e.family, e.table)
				doc.last = t
			}
			c, _ := t.chainNamed(string(data[e.nameStart:e.nameEnd]))
			c.Handle = e.handle
			c.Type, c.Hook, c.Policy, c.Comment = "", "", "", ""
			continue
		}
		item, late := doc.decodeSet(p, e)
		var err error
		if item == nil {
			item, err = decodeRaw(data[e.start:e.end])
		}
		if err != nil {
			return nil, nil, fullError(source, data, jsonErrorAt(source, data, int64(e.start), err))
		}
		path := fmt.Sprintf("nftables[%d]", i)
		p.lastSet = nil
		err = p.object(item, path)
		p.elems = nil
		if late != nil {
			late.madeAs(p.lastSet, p.lastTable, path+"."+e.kind)
			pending = append(pending, late)
		}
		if err != nil {
			return nil, nil, fullError(source, data, fmt.Errorf("nftables: %s: %w", source, err))
		}
	}
	for _, late := range pending {
		if err := late.finish(p); err != nil {
			return nil, nil, fullError(source, data, err)
		}
	}
	for _, t := range p.rs.Tables {
		for _, s := range t.Sets {
			if s.index == nil { // not indexed by a goroutine of readLate
				s.buildIndex()
			}
		}
	}
	doc.tables = p.tables
	return p.rs, doc, nil
}

// fullError is the error Parse finds in data, which may be in a rule
// before the element the scan found err in; err if Parse finds none.
func fullError(source string, data []byte, err error) error {
	if _, perr := Parse(source, data); perr != nil {
		return perr
	}
	return err
}

// chainOf files a rule under its chain, undecoded, and returns the chain;
// nil when the rule must be decoded now: its chain is not declared yet
// (decoding declares it, with a note) or holds rules decoded already.
func (doc *lazyDoc) chainOf(p *parser, e *rawElem) *Chain {
	t := doc.last
	if t == nil || t.Family != e.family || t.Name != e.table {
		if t = p.tables[e.family+" "+e.table]; t == nil {
			return nil
		}
		doc.last = t
	}
	c := t.chains[string(doc.data[e.nameStart:e.nameEnd])]
	if c == nil || c.lazy == nil && len(c.Rules) > 0 {
		return nil
	}
	if c.lazy == nil {
		c.lazy = &lazyRules{doc: doc}
		t.lazy = true
	}
	c.lazy.elems = append(c.lazy.elems, p.at)
	c.lazy.marks |= e.marks
	return c
}

// decodeSet decodes a set or map whose elements plainElems reads (nil
// otherwise): the elements go to p.elems, the rest through the decoder,
// its "elem" read as null. A big set's elements are read in another
// goroutine, and late (not nil) finishes the set.
func (doc *lazyDoc) decodeSet(p *parser, e *rawElem) (any, *lateElems) {
	if e.kind != "set" && e.kind != "map" || e.elemEnd == 0 {
		return nil, nil
	}
	raw := doc.data[e.elemStart:e.elemEnd]
	big := len(raw) >= minLateElems
	if !big {
		elems, ok := plainElems(raw, e.kind == "map")
		if !ok || elems == nil {
			return nil, nil
		}
		p.elems = elems
	}
	rest := make([]byte, 0, e.end-e.start-(e.elemEnd-e.elemStart)+4)
	rest = append(append(append(rest, doc.data[e.start:e.elemStart]...), "null"...), doc.data[e.elemEnd:e.end]...)
	item, err := decodeRaw(rest)
	if err != nil {
		// Decoded whole, for the position of the error.
		p.elems = nil
		return nil, nil
	}
	if big {
		return item, readLate(doc, e)
	}
	return item, nil
}

// decodeRaw decodes one element as Parse's decoder does.
func decodeRaw(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the element at byte %d", dec.InputOffset())
	}
	return v, nil
}

// decodeRules decodes a chain's rules (once: Chain.rules). An error stops
// the chain there and is kept for Err.
func (doc *lazyDoc) decodeRules(c *Chain) {
	// The tables are only read here: every rule's table and chain exist.
	p := &parser{rs: &Ruleset{Source: doc.source}, tables: doc.tables}
	for _, i := range c.lazy.elems {
		p.at = i
		e := doc.elems[i]
		item, err := decodeRaw(doc.data[e.start:e.end])
		if err != nil {
			err = jsonErrorAt(doc.source, doc.data, int64(e.start), err)
		} else if err = p.object(item, fmt.Sprintf("nftables[%d]", i)); err != nil {
			err = fmt.Errorf("nftables: %s: %w", doc.source, err)
		}
		if err != nil {
			doc.fail(err)
			break
		}
	}
	if len(p.rs.Notes) > 0 {
		doc.mu.Lock()
		for _, n := range p.rs.Notes {
			if !doc.given[n.at] {
				doc.notes = append(doc.notes, n)
			}
		}
		doc.mu.Unlock()
	}
}

// fail keeps the error a rule decoded late has: the one Parse finds in the
// document, which may be elsewhere (a JSON syntax error anywhere comes
// first, as may an error in an earlier rule). The document is parsed
// once, for the first rule that fails.
func (doc *lazyDoc) fail(err error) {
	doc.failed.Do(func() {
		err = fullError(doc.source, doc.data, err)
		if doc.wrap != nil {
			err = doc.wrap(err)
		}
		doc.mu.Lock()
		doc.err = err
		doc.mu.Unlock()
	})
}

func (doc *lazyDoc) firstErr() error {
	if doc == nil {
		return nil
	}
	doc.mu.Lock()
	defer doc.mu.Unlock()
	return doc.err
}

// withNotes adds the notes of the rules decoded late to the notes of the
// scan, in input order.
func (doc *lazyDoc) withNotes(notes []Note) []Note {
	if doc == nil {
		return notes
	}
	doc.mu.Lock()
	late := append([]Note(nil), doc.notes...)
	doc.mu.Unlock()
	if len(late) == 0 {
		return notes
	}
	all := append(append([]Note(nil), notes...), late...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
	return all
}
