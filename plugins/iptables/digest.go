package iptables

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wire"
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

	w := wireWriter{Writer: wire.Writer{Buf: make([]byte, 0, len(st.text)/16)}, text: st.text}
	w.Header(digestMagic, digestVersion, unsafe.Slice(unsafe.StringData(st.text), len(st.text)))
	w.Str(st.opts.Table)
	w.Str(st.opts.Family)
	w.Str(rs.Backend)
	w.Str(rs.Family)
	writeNotes(&w, rs.Notes)
	w.Uint(uint64(len(rs.TableOrder)))
	for _, name := range rs.TableOrder {
		if !writeTable(&w, rs.Tables[name]) {
			return nil, nil
		}
	}
	writeFacts(&w, &facts, rs.TableOrder)
	writeNotes(&w, late)
	return w.Buf, nil
}

func writeNotes(w *wireWriter, notes []Note) {
	w.Uint(uint64(len(notes)))
	for _, n := range notes {
		w.Uint(uint64(n.Line))
		w.Str(n.Message)
	}
}

func writeFacts(w *wireWriter, f *dumpFacts, tables []string) {
	w.Str(f.infer.Mode)
	w.Strs(f.infer.ClusterCIDRs)
	w.Int(int64(f.infer.MasqueradeBit))
	w.Str(f.infer.LocalIface)
	w.Strs(f.infer.Evidence)
	w.Uint(uint64(len(f.frontends)))
	for _, fe := range f.frontends {
		w.Str(string(fe.Key.Kind))
		w.Str(fe.Key.IP)
		w.Int(int64(fe.Key.Port))
		w.Str(fe.Key.Protocol)
		w.Str(fe.Service)
	}
	w.Uint(uint64(f.kube))
	for _, t := range tables {
		pos := f.orphans[t]
		w.Uint(uint64(len(pos)))
		prev := 0
		for _, p := range pos {
			w.Uint(uint64(p - prev))
			prev = p
		}
	}
}

// parseDigested is parseLazy for a dump with its digest: the tables and
// chains come from the digest, each chain's lines from the text when the
// chain is first used. An error wraps errDigestVersion for a digest of
// another layout and errDigest for one that is damaged or not text's.
func parseDigested(source, text string, opts ParseOptions, data []byte) (*Ruleset, error) {
	r := newWireReader(data, text)
	if err := r.Header(digestMagic, digestVersion, errDigestVersion, unsafe.Slice(unsafe.StringData(text), len(text)), "dump"); err != nil {
		return nil, err
	}
	if table, family := r.Str(), r.Str(); r.Err == nil && (table != opts.Table || family != opts.Family) {
		return nil, fmt.Errorf("%w: made for table %q, family %q; read with %q, %q", errDigest, table, family, opts.Table, opts.Family)
	}
	rs := &Ruleset{Source: source, Backend: r.Str(), Family: r.Str(), Tables: map[string]*Table{}}
	rs.Notes = readNotes(r)
	lz := &lazyState{src: source, opts: opts, family: rs.Family, text: text}
	for range r.Small(64) {
		if t := readTable(r, lz); t != nil {
			if rs.Tables[t.Name] != nil {
				r.Fail("table %s twice", t.Name)
			}
			rs.Tables[t.Name] = t
			rs.TableOrder = append(rs.TableOrder, t.Name)
		}
	}
	facts := readFacts(r, rs)
	late := readNotes(r)
	r.End()
	if r.Err != nil {
		return nil, r.Err
	}
	lz.addNotes(late)
	rs.lazy, rs.facts = []*lazyState{lz}, facts
	return rs, nil
}

func readNotes(r *wireReader) []Note {
	n := r.Small(r.Left() / 2)
	var out []Note
	for range n {
		out = append(out, Note{Line: r.Small(len(r.text) + 1), Message: r.Str()})
		if r.Err != nil {
			return nil
		}
	}
	return out
}

// readLines reads a table's n single lines (see writeTable) into buf.
func readLines(r *wireReader, buf []lazyLine, n int) []lazyLine {
	if n > len(buf) {
		r.Fail("%d lines, more than %d", n, len(buf))
		return nil
	}
	end, line := 0, 0
	for i := range n {
		off := readOffset(r, end)
		size := r.Small(len(r.text) - off)
		line = readOffset(r, line)
		col := r.Small(size)
		if r.Err == nil && (off > 0 && r.text[off-1] != '\n' || off+size < len(r.text) && r.text[off+size] != '\n' && r.text[off+size] != '\r') {
			r.Fail("a line at byte %d of the dump that is not one", off)
		}
		if r.Err != nil {
			return nil
		}
		buf[i] = lazyLine{text: r.text[off : off+size], n: int32(line), col: int32(col)}
		end = off + size
	}
	return buf[:n:n]
}

func readFacts(r *wireReader, rs *Ruleset) *dumpFacts {
	f := &dumpFacts{orphans: map[string][]int{}}
	f.infer.Mode, f.infer.ClusterCIDRs = r.Str(), r.Strs()
	f.infer.MasqueradeBit = int32(r.Int())
	f.infer.LocalIface = r.Str()
	f.infer.Evidence = r.Strs()
	n := r.Small(r.Left() / 5)
	f.frontends = make([]behavior.Frontend, 0, n)
	for range n {
		var fe behavior.Frontend
		fe.Key.Kind, fe.Key.IP = behavior.FrontendKind(r.Str()), r.Str()
		fe.Key.Port = int32(r.Int())
		fe.Key.Protocol, fe.Service = r.Str(), r.Str()
		if r.Err != nil {
			return nil
		}
		f.frontends = append(f.frontends, fe)
	}
	f.kube = r.Small(1<<31 - 1)
	for _, name := range rs.TableOrder {
		chains := rs.Tables[name].size()
		var pos []int
		prev := 0
		for range r.Small(chains) {
			prev += r.Small(chains - 1 - prev)
			pos = append(pos, prev)
		}
		f.orphans[name] = pos
	}
	return f
}
