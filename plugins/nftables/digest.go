package nftables

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wire"
	"github.com/svctrace/svctrace/snapshot"
)

// A digest holds what a narrow read learns by going through the whole
// document: where each element of its array lies and what the scan read
// of it (scanDocument), and the frontends each family's plane finds in
// kube-proxy's maps (discover), with the notes of the rules discover
// decoded. It is made when the dump is collected (Loader.IndexDump) and
// kept beside the dump in a binary snapshot (snapshot.Dump.Index); a
// narrow read of that snapshot (explain of one Service) then neither
// scans the document nor lists every frontend, and answers exactly as a
// read without it.

// digestMagic starts every digest; digestVersion is the layout's version.
// A digest of another version is not read (the document is then scanned).
const (
	digestMagic   = "svctrace nftables digest\n"
	digestVersion = 1
)

var (
	errDigest        = errors.New("damaged digest")
	errDigestVersion = errors.New("digest of another version")
)

// digestFacts are a digest's answers for the document.
type digestFacts struct {
	families []familyFacts
	// late are the notes of the rules discover decoded.
	late []Note
}

// familyFacts are discover's answer for one family's plane.
type familyFacts struct {
	family    string
	frontends []behavior.Frontend
	notes     []string
}

// of is the answer for family; nil when the digest has none (or there is
// no digest: f is nil).
func (f *digestFacts) of(family string) *familyFacts {
	if f == nil {
		return nil
	}
	for i := range f.families {
		if f.families[i].family == family {
			return &f.families[i]
		}
	}
	return nil
}

var _ dataplane.DumpIndexer = Loader{}

// IndexDump digests the node's nft JSON dump d; nil for a dump of another
// collector, and for a document a narrow read parses in full anyway.
func (Loader) IndexDump(ns *snapshot.NodeState, d *snapshot.Dump) ([]byte, error) {
	if d.Collector != CollectorJSON || d.Text == "" {
		return nil, nil
	}
	data := unsafe.Slice(unsafe.StringData(d.Text), len(d.Text))
	wrap := func(err error) error { return dataplane.NewDumpError(ns.Name, d, 0, 0, "", err) }
	elems, ok := scanDocument(data)
	rs, doc, err := parseScanned(dataplane.Origin(ns.Name, d), data, elems, ok)
	if err != nil {
		return nil, wrap(err)
	}
	if doc == nil {
		return nil, nil
	}
	doc.wrap = wrap
	var facts digestFacts
	for _, family := range []string{"IPv4", "IPv6"} {
		// The planes LoadNarrow makes.
		if len(rs.Tables) == 0 || hasFamilyTables(rs, family) {
			pl := NewPlane(rs, family)
			pl.deferred = doc
			fs, notes := pl.listFrontends()
			facts.families = append(facts.families, familyFacts{family: family, frontends: fs, notes: notes})
		}
	}
	if err := doc.firstErr(); err != nil {
		return nil, err
	}
	doc.mu.Lock()
	facts.late = slices.Clone(doc.notes)
	doc.mu.Unlock()
	return writeDigest(data, elems, &facts), nil
}

// readNarrow is parseNarrow with the document's digest (index) when it
// has one this svctrace reads. A damaged digest, or one of another
// document, is set aside with a note: the document is then scanned.
func readNarrow(source string, data, index []byte) (*Ruleset, *lazyDoc, *digestFacts, error) {
	if len(index) == 0 {
		rs, doc, err := parseNarrow(source, data)
		return rs, doc, nil, err
	}
	elems, facts, derr := readDigest(index, data)
	if derr != nil {
		rs, doc, err := parseNarrow(source, data)
		if err == nil && !errors.Is(derr, errDigestVersion) {
			rs.Notes = append(rs.Notes, Note{Text: fmt.Sprintf("%s: the dump's index was not used (%v): the dump was scanned instead", source, derr)})
		}
		return rs, doc, nil, err
	}
	rs, doc, err := parseScanned(source, data, elems, true)
	if err != nil || doc == nil {
		return rs, doc, nil, err
	}
	doc.given = make(map[int]bool, len(facts.late))
	for _, n := range facts.late {
		doc.given[n.at] = true
	}
	doc.notes = append(doc.notes, facts.late...)
	return rs, doc, facts, nil
}

func writeDigest(data []byte, elems []rawElem, facts *digestFacts) []byte {
	w := wire.Writer{Buf: make([]byte, 0, 16*len(elems)+1024)}
	w.Header(digestMagic, digestVersion, data)
	// The elements' kinds, families and tables, as indexes into a list.
	var names []string
	index := map[string]uint64{}
	name := func(s string) uint64 {
		i, ok := index[s]
		if !ok {
			i = uint64(len(names))
			index[s] = i
			names = append(names, s)
		}
		return i
	}
	for _, e := range elems {
		name(e.kind)
		name(e.family)
		name(e.table)
	}
	w.Strs(names)
	w.Uint(uint64(len(elems)))
	end := 0
	for _, e := range elems {
		w.Uint(uint64(e.start - end))
		w.Uint(uint64(e.end - e.start))
		w.Uint(index[e.kind])
		w.Uint(index[e.family])
		w.Uint(index[e.table])
		w.Uint(span(e.start, e.nameStart))
		w.Uint(span(e.start, e.nameEnd))
		w.Int(int64(e.handle))
		var flags uint64
		if e.plain {
			flags |= 1
		}
		if e.other {
			flags |= 2
		}
		w.Uint(flags)
		w.Uint(uint64(e.marks))
		w.Uint(span(e.start, e.elemStart))
		w.Uint(span(e.start, e.elemEnd))
		end = e.end
	}
	w.Uint(uint64(len(facts.families)))
	for _, f := range facts.families {
		w.Str(f.family)
		// The count plus one; 0 for none at all (no kube-proxy table).
		if f.frontends == nil {
			w.Uint(0)
		} else {
			w.Uint(uint64(len(f.frontends)) + 1)
		}
		for _, fe := range f.frontends {
			w.Str(string(fe.Key.Kind))
			w.Str(fe.Key.IP)
			w.Uint(uint64(fe.Key.Port))
			w.Str(fe.Key.Protocol)
			w.Str(fe.Service)
		}
		w.Strs(f.notes)
	}
	w.Uint(uint64(len(facts.late)))
	for _, n := range facts.late {
		w.Uint(uint64(n.at))
		w.Str(n.Family)
		w.Str(n.Text)
	}
	return w.Buf
}

// span is where pos lies in an element starting at start, plus one; 0 for
// none (pos 0: the scan found none).
func span(start, pos int) uint64 {
	if pos == 0 {
		return 0
	}
	return uint64(pos-start) + 1
}

// readDigest reads the elements and facts of data's digest. An error
// wraps errDigestVersion for a digest of another layout, errDigest for one
// that is damaged or of another document.
func readDigest(index, data []byte) ([]rawElem, *digestFacts, error) {
	r := &wire.Reader{Buf: index, Damaged: errDigest}
	if err := r.Header(digestMagic, digestVersion, errDigestVersion, data, "document"); err != nil {
		return nil, nil, err
	}
	names := r.Strs()
	elems := readElems(r, names, data)
	facts := &digestFacts{}
	for range r.Small(2) {
		facts.families = append(facts.families, readFamily(r))
	}
	for range r.Small(r.Left()) {
		n := Note{at: r.Small(len(elems)), Family: r.Str(), Text: r.Str()}
		facts.late = append(facts.late, n)
	}
	r.End()
	if r.Err != nil {
		return nil, nil, r.Err
	}
	return elems, facts, nil
}

// readElems reads the elements, each inside data and after the one before
// it, its parts inside it, and holding what the scan found there: an
// object, its name a string.
func readElems(r *wire.Reader, names []string, data []byte) []rawElem {
	size := len(data)
	// Each element takes a dozen bytes of the digest, or more.
	elems := make([]rawElem, r.Small(r.Left()/12))
	str := func() string {
		i := r.Small(len(names))
		if r.Err == nil && i == len(names) {
			r.Fail("name %d of %d", i, len(names))
		}
		if r.Err != nil {
			return ""
		}
		return names[i]
	}
	end := 0
	for i := range elems {
		e := &elems[i]
		e.start = end + r.Small(size-end)
		e.end = e.start + r.Small(size-e.start)
		e.kind, e.family, e.table = str(), str(), str()
		e.nameStart, e.nameEnd = inElem(r, e), inElem(r, e)
		e.handle = int(r.Int())
		flags := r.Small(3)
		e.plain, e.other = flags&1 != 0, flags&2 != 0
		e.marks = ruleMarks(r.Small(int(markAll)))
		e.elemStart, e.elemEnd = inElem(r, e), inElem(r, e)
		if r.Err == nil && (e.end == e.start || e.nameStart > e.nameEnd || e.elemEnd != 0 && e.elemStart > e.elemEnd) {
			r.Fail("element %d: spans out of order", i)
		}
		if r.Err == nil && !scannedAs(data, e) {
			r.Fail("element %d is not at bytes %d to %d of the document", i, e.start, e.end)
		}
		if r.Err != nil {
			return nil
		}
		end = e.end
	}
	return elems
}

// scannedAs: data holds an element where e says, as the scan leaves it:
// an object (after white space), its name between quotes.
func scannedAs(data []byte, e *rawElem) bool {
	i := e.start
	for i < e.end && isSpace(data[i]) {
		i++
	}
	if i == e.end || data[i] != '{' || data[e.end-1] != '}' {
		return e.kind == "" // not an object: the decoder reads it
	}
	return e.nameEnd == 0 || e.nameStart > e.start && e.nameEnd < e.end && data[e.nameStart-1] == '"' && data[e.nameEnd] == '"'
}

// inElem reads a position inside e (see span).
func inElem(r *wire.Reader, e *rawElem) int {
	if n := r.Small(e.end - e.start + 1); n > 0 {
		return e.start + n - 1
	}
	return 0
}

func readFamily(r *wire.Reader) familyFacts {
	f := familyFacts{family: r.Str()}
	if n := r.Small(r.Left()/5 + 1); n > 0 {
		f.frontends = make([]behavior.Frontend, n-1)
	}
	for i := range f.frontends {
		k := behavior.Key{Kind: behavior.FrontendKind(r.Str()), IP: r.Str(), Port: int32(r.Small(65535)), Protocol: r.Str()}
		f.frontends[i] = behavior.Frontend{Key: k, Service: r.Str()}
	}
	f.notes = r.Strs()
	return f
}
