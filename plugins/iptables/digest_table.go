package iptables

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sync"
)

// A table's part of a digest is a record of fixed size per chain, in the
// table's order, and a hash table of the chains by name: a read with the
// digest makes a Chain only when it is looked up or the table is walked
// in full (Table.chains), so explaining one Service of a node with 100,000
// chains makes a few dozen of them.
//
// A record is recFields little-endian uint32s: the chain's name and
// policy as places in the text (a policy of length 0 is "-"), its
// declaration line, and its lines: none, a run (start, end, first line,
// count; see lineRun) or, for lines that do not form one, count lines
// from the table's list of single lines (written after the hash table).
const (
	recName, recNameLen, recPolicy, recPolicyLen, recLine, recKind, recA, recB, recC, recCount = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
	recFields                                                                                  = 10
	recSize                                                                                    = 4 * recFields
)

// Kinds of a chain's lines in its record.
const (
	linesNone = iota
	linesRun
	linesEach
)

// chainHash places a chain's name in the hash table: FNV-1a, the same in
// every process.
func chainHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// writeTable writes t's part of a digest; false when a chain's name or
// policy is not in the text as it is (a quoted name), which a record
// cannot tell.
func writeTable(w *wireWriter, t *Table) bool {
	w.Str(t.Name)
	tableLine := 0
	recs := make([]byte, len(t.order)*recSize)
	var each []lazyLine
	for i, c := range t.order {
		rec := make([]uint32, recFields)
		name, ok := offsetIn(w.text, c.Name)
		if !ok {
			return false
		}
		rec[recName], rec[recNameLen], rec[recLine] = uint32(name), uint32(len(c.Name)), uint32(c.Line)
		if c.Policy != "-" && c.Policy != "" {
			pol, ok := offsetIn(w.text, c.Policy)
			if !ok {
				return false
			}
			rec[recPolicy], rec[recPolicyLen] = uint32(pol), uint32(len(c.Policy))
		}
		if l := c.lazy; l != nil && len(l.lines) > 0 {
			tableLine = l.tableLine
			rec[recCount] = uint32(len(l.lines))
			if run, ok := asRun(w.text, l.lines); ok {
				rec[recKind], rec[recA], rec[recB], rec[recC] = linesRun, uint32(run.start), uint32(run.end), uint32(run.first)
			} else {
				rec[recKind], rec[recA] = linesEach, uint32(len(each))
				each = append(each, l.lines...)
			}
		}
		for f, v := range rec {
			binary.LittleEndian.PutUint32(recs[i*recSize+4*f:], v)
		}
	}
	w.Uint(uint64(tableLine))
	w.Uint(uint64(len(t.order)))
	w.Buf = append(w.Buf, recs...)
	slots := 2
	for slots < 2*len(t.order) {
		slots *= 2
	}
	table := make([]uint32, slots)
	for i, c := range t.order {
		for s := chainHash(c.Name) & uint32(slots-1); ; s = (s + 1) & uint32(slots-1) {
			if table[s] == 0 {
				table[s] = uint32(i + 1)
				break
			}
		}
	}
	w.Uint(uint64(slots))
	for _, v := range table {
		w.Buf = binary.LittleEndian.AppendUint32(w.Buf, v)
	}
	w.Uint(uint64(len(each)))
	end, n := 0, 0
	for _, ln := range each {
		off, _ := offsetIn(w.text, ln.text)
		w.Int(int64(off - end))
		w.Uint(uint64(len(ln.text)))
		w.Int(int64(int(ln.n) - n))
		w.Uint(uint64(ln.col))
		end, n = off+len(ln.text), int(ln.n)
	}
	return true
}

// tableDigest is a table read with a digest: its chains are made from
// their records when first needed.
type tableDigest struct {
	t         *Table
	lz        *lazyState
	tableLine int
	recs      []byte // count records
	slots     []byte // the hash table, uint32 each
	each      []lazyLine
	count     int

	mu   sync.Mutex
	made []*Chain
	all  sync.Once
}

func readTable(r *wireReader, lz *lazyState) *Table {
	name, tableLine := r.Str(), r.Small(len(r.text)+1)
	count := r.Small(r.Left() / recSize)
	if r.Err == nil && count*recSize > r.Left() {
		r.Fail("%d chains in %d bytes", count, r.Left())
	}
	if r.Err != nil {
		return nil
	}
	d := &tableDigest{lz: lz, tableLine: tableLine, count: count, made: make([]*Chain, count)}
	d.recs, r.Pos = r.Buf[r.Pos:r.Pos+count*recSize], r.Pos+count*recSize
	slots := r.Small(r.Left() / 4)
	if r.Err == nil && (slots == 0 || slots&(slots-1) != 0 || slots < count || 4*slots > r.Left()) {
		r.Fail("a hash table of %d slots for %d chains", slots, count)
	}
	if r.Err != nil {
		return nil
	}
	d.slots, r.Pos = r.Buf[r.Pos:r.Pos+4*slots], r.Pos+4*slots
	d.each = make([]lazyLine, r.Small(r.Left()/4))
	d.each = readLines(r, d.each, len(d.each))
	d.t = &Table{Name: name, dig: d}
	return d.t
}

// readOffset reads a position written as its difference from base: a
// byte offset in the text or a line number.
func readOffset(r *wireReader, base int) int {
	v := int64(base) + r.Int()
	if v < 0 || v > int64(len(r.text)) {
		r.Fail("position %d out of the dump's %d bytes", v, len(r.text))
		return 0
	}
	return int(v)
}

func (d *tableDigest) field(i, f int) int {
	return int(binary.LittleEndian.Uint32(d.recs[i*recSize+4*f:]))
}

// name is the name of chain i, "" when its record places it outside the
// text.
func (d *tableDigest) name(i int) string {
	off, n := d.field(i, recName), d.field(i, recNameLen)
	if off > len(d.lz.text) || n > len(d.lz.text)-off {
		return ""
	}
	return d.lz.text[off : off+n]
}

// lookup is the chain of that name, nil when there is none.
func (d *tableDigest) lookup(name string) *Chain {
	mask := uint32(len(d.slots)/4 - 1)
	s := chainHash(name) & mask
	for range len(d.slots) / 4 {
		v := int(binary.LittleEndian.Uint32(d.slots[4*s:]))
		if v == 0 || v > d.count {
			return nil
		}
		if d.name(v-1) == name {
			return d.chain(v - 1)
		}
		s = (s + 1) & mask
	}
	return nil
}

// chain is chain i, made from its record on first use. A record that does
// not fit the text (a damaged digest) is told by the ruleset's Err; the
// chain then has no rules.
func (d *tableDigest) chain(i int) *Chain {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.made[i]; c != nil {
		return c
	}
	text := d.lz.text
	c := &Chain{Name: d.name(i), Policy: "-", Line: d.field(i, recLine), pos: i}
	c.Builtin = isBuiltinChain(c.Name)
	bad := func(format string, args ...any) {
		d.lz.fail(&ParseError{Source: d.lz.src, Line: c.Line, Column: 1,
			Msg: fmt.Sprintf("chain %d of table %s in the dump's index: %s (a damaged index?)", i, d.t.Name, fmt.Sprintf(format, args...))})
	}
	if c.Name == "" {
		bad("its name lies outside the dump")
	}
	if off, n := d.field(i, recPolicy), d.field(i, recPolicyLen); n > 0 {
		if off > len(text) || n > len(text)-off {
			bad("its policy lies outside the dump")
		} else {
			c.Policy = text[off : off+n]
		}
	}
	l := &lazyChain{state: d.lz, table: d.t, tableLine: d.tableLine, transient: perServiceChain(c.Name)}
	n, a, b := d.field(i, recCount), d.field(i, recA), d.field(i, recB)
	switch d.field(i, recKind) {
	case linesNone:
	case linesRun:
		// A rule line takes 4 bytes or more ("-A C") and a line break.
		if a > b || b > len(text) || n == 0 || n > (b-a)/4+1 {
			bad("its lines lie outside the dump")
			break
		}
		l.run = &lineRun{start: a, end: b, first: d.field(i, recC), count: n}
		c.lazy = l
	case linesEach:
		if a > len(d.each) || n > len(d.each)-a {
			bad("its lines are not in the index")
			break
		}
		l.lines = d.each[a : a+n : a+n]
		c.lazy = l
	default:
		bad("unknown kind of lines %d", d.field(i, recKind))
	}
	d.made[i] = c
	return c
}

// fill makes every chain of the table, once, for what reads all of them.
func (d *tableDigest) fill() {
	d.all.Do(func() {
		t := d.t
		chains := make(map[string]*Chain, d.count)
		order := make([]*Chain, d.count)
		names := make([]string, d.count)
		for i := range d.count {
			c := d.chain(i)
			chains[c.Name], order[i], names[i] = c, c, c.Name
		}
		t.Chains, t.order, t.ChainOrder = chains, order, names
	})
}
