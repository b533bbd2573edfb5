package iptables

import (
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"unsafe"

	"github.com/svctrace/svctrace/behavior"
)

// A digest holds what a lazy read of a dump learns by scanning all of it
// (its tables, its chains and where each chain's lines lie) and the
// answers to the questions a narrowed analysis still asks of the whole
// dump: the settings Infer reads, the frontends, and the per-Service
// chains no rule jumps to. It is made once, when the dump is collected
// (Loader.IndexDump), and kept beside the dump in a binary snapshot
// (snapshot.Dump.Index); explaining one Service of that snapshot then
// reads neither the whole text nor the rules it does not walk. A narrowed
// read with the digest answers exactly as one without it.

// dumpFacts are a digest's answers for the dump's ruleset.
type dumpFacts struct {
	infer     Inferred
	frontends []behavior.Frontend
	// orphans are, by table, the positions (in the table's order) of the
	// per-Service chains no rule of the table jumps to.
	orphans map[string][]int
	// kube counts kube-proxy's chains and their rules (countKube).
	kube int
}

// errDigestVersion is a digest of another layout: not read, not an error.
var errDigestVersion = errors.New("digest of another version")

// digest encodes rs, a ruleset read lazily from one dump (parseLazy),
// with its facts; nil when rs cannot be told by a digest (read in full, or
// holding rules of a command other than -A).
func digest(rs *Ruleset) ([]byte, error) {
	if len(rs.lazy) != 1 {
		return nil, nil
	}
	st := rs.lazy[0]
	for _, t := range rs.Tables {
		for _, c := range t.chains() {
			if len(c.rules) > 0 {
				return nil, nil
			}
		}
	}
	facts := dumpFacts{infer: Infer(rs), frontends: discover(rs), orphans: orphanChains(rs), kube: countKube(rs)}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	late := slices.Clone(st.notes)
	st.mu.Unlock()

	w := wireWriter{text: st.text, buf: make([]byte, 0, len(st.text)/16)}
	w.buf = append(w.buf, digestMagic...)
	w.uint(digestVersion)
	w.uint(uint64(len(st.text)))
	w.uint(uint64(crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(st.text), len(st.text)))))
	w.str(st.opts.Table)
	w.str(st.opts.Family)
	w.str(rs.Backend)
	w.str(rs.Family)
	writeNotes(&w, rs.Notes)
	w.uint(uint64(len(rs.TableOrder)))
	for _, name := range rs.TableOrder {
		if !writeTable(&w, rs.Tables[name]) {
			return nil, nil
		}
	}
	writeFacts(&w, &facts, rs.TableOrder)
	writeNotes(&w, late)
	return w.buf, nil
}

func writeNotes(w *wireWriter, notes []Note) {
	w.uint(uint64(len(notes)))
	for _, n := range notes {
		w.uint(uint64(n.Line))
		w.str(n.Message)
	}
}

func writeFacts(w *wireWriter, f *dumpFacts, tables []string) {
	w.str(f.infer.Mode)
	w.strs(f.infer.ClusterCIDRs)
	w.int(int64(f.infer.MasqueradeBit))
	w.str(f.infer.LocalIface)
	w.strs(f.infer.Evidence)
	w.uint(uint64(len(f.frontends)))
	for _, fe := range f.frontends {
		w.str(string(fe.Key.Kind))
		w.str(fe.Key.IP)
		w.int(int64(fe.Key.Port))
		w.str(fe.Key.Protocol)
		w.str(fe.Service)
	}
	w.uint(uint64(f.kube))
	for _, t := range tables {
		pos := f.orphans[t]
		w.uint(uint64(len(pos)))
		prev := 0
		for _, p := range pos {
			w.uint(uint64(p - prev))
			prev = p
		}
	}
}

// parseDigested is parseLazy for a dump with its digest: the tables and
// chains come from the digest, each chain's lines from the text when the
// chain is first used. An error wraps errDigestVersion for a digest of
// another layout and errDigest for one that is damaged or not text's.
func parseDigested(source, text string, opts ParseOptions, data []byte) (*Ruleset, error) {
	r := &wireReader{buf: data, text: text}
	if len(data) < len(digestMagic) || string(data[:len(digestMagic)]) != digestMagic {
		return nil, fmt.Errorf("%w: it does not start as one", errDigest)
	}
	r.pos = len(digestMagic)
	if v := r.uint(); r.err == nil && v != digestVersion {
		return nil, fmt.Errorf("%w (%d; this svctrace reads %d)", errDigestVersion, v, digestVersion)
	}
	size, sum := r.uint(), r.uint()
	if r.err == nil && (size != uint64(len(text)) || sum != uint64(crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(text), len(text))))) {
		return nil, fmt.Errorf("%w: it is of another dump (%d bytes, CRC %08x; this one has %d bytes)", errDigest, size, sum, len(text))
	}
	if table, family := r.str(), r.str(); r.err == nil && (table != opts.Table || family != opts.Family) {
		return nil, fmt.Errorf("%w: made for table %q, family %q; read with %q, %q", errDigest, table, family, opts.Table, opts.Family)
	}
	rs := &Ruleset{Source: source, Backend: r.str(), Family: r.str(), Tables: map[string]*Table{}}
	rs.Notes = readNotes(r)
	lz := &lazyState{src: source, opts: opts, family: rs.Family, text: text}
	for range r.small(64) {
		if t := readTable(r, lz); t != nil {
			if rs.Tables[t.Name] != nil {
				r.fail("table %s twice", t.Name)
			}
			rs.Tables[t.Name] = t
			rs.TableOrder = append(rs.TableOrder, t.Name)
		}
	}
	facts := readFacts(r, rs)
	late := readNotes(r)
	if r.err == nil && r.pos != len(data) {
		r.fail("%d bytes left over", len(data)-r.pos)
	}
	if r.err != nil {
		return nil, r.err
	}
	lz.addNotes(late)
	rs.lazy, rs.facts = []*lazyState{lz}, facts
	return rs, nil
}

func readNotes(r *wireReader) []Note {
	n := r.small(r.left() / 2)
	var out []Note
	for range n {
		out = append(out, Note{Line: r.small(len(r.text) + 1), Message: r.str()})
		if r.err != nil {
			return nil
		}
	}
	return out
}

// readLines reads a table's n single lines (see writeTable) into buf.
func readLines(r *wireReader, buf []lazyLine, n int) []lazyLine {
	if n > len(buf) {
		r.fail("%d lines, more than %d", n, len(buf))
		return nil
	}
	end, line := 0, 0
	for i := range n {
		off := readOffset(r, end)
		size := r.small(len(r.text) - off)
		line = readOffset(r, line)
		col := r.small(size)
		if r.err == nil && (off > 0 && r.text[off-1] != '\n' || off+size < len(r.text) && r.text[off+size] != '\n' && r.text[off+size] != '\r') {
			r.fail("a line at byte %d of the dump that is not one", off)
		}
		if r.err != nil {
			return nil
		}
		buf[i] = lazyLine{text: r.text[off : off+size], n: int32(line), col: int32(col)}
		end = off + size
	}
	return buf[:n:n]
}

func readFacts(r *wireReader, rs *Ruleset) *dumpFacts {
	f := &dumpFacts{orphans: map[string][]int{}}
	f.infer.Mode, f.infer.ClusterCIDRs = r.str(), r.strs()
	f.infer.MasqueradeBit = int32(r.int())
	f.infer.LocalIface = r.str()
	f.infer.Evidence = r.strs()
	n := r.small(r.left() / 5)
	f.frontends = make([]behavior.Frontend, 0, n)
	for range n {
		var fe behavior.Frontend
		fe.Key.Kind, fe.Key.IP = behavior.FrontendKind(r.str()), r.str()
		fe.Key.Port = int32(r.int())
		fe.Key.Protocol, fe.Service = r.str(), r.str()
		if r.err != nil {
			return nil
		}
		f.frontends = append(f.frontends, fe)
	}
	f.kube = r.small(1<<31 - 1)
	for _, name := range rs.TableOrder {
		chains := rs.Tables[name].size()
		var pos []int
		prev := 0
		for range r.small(chains) {
			prev += r.small(chains - 1 - prev)
			pos = append(pos, prev)
		}
		f.orphans[name] = pos
	}
	return f
}
