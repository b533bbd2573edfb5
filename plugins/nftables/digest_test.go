package nftables

import (
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// digested is nodeWith(text) with its dump's digest.
func digested(t *testing.T, text string) *snapshot.NodeState {
	t.Helper()
	ns := nodeWith(text)
	index, err := Loader{}.IndexDump(ns, &ns.Dumps[0])
	if err != nil {
		t.Fatal(err)
	}
	ns.Dumps[0].Index = index
	return ns
}

// TestDigestSameAnswers: a narrow read with the dump's digest answers what
// a full read does, on every input the scan reads and in both families,
// with the frontends the digest holds.
func TestDigestSameAnswers(t *testing.T) {
	n := 0
	for name, text := range narrowInputs(t) {
		ns := digested(t, text)
		if ns.Dumps[0].Index == nil {
			continue // read in full: nothing to digest
		}
		n++
		for _, fam := range []string{"IPv4", "IPv6"} {
			w, err := Loader{}.Load(nodeWith(text), fam)
			if err != nil {
				t.Fatal(err)
			}
			nw, err := Loader{}.LoadNarrow(ns, fam)
			if err != nil {
				t.Fatal(err)
			}
			if w == nil || nw == nil {
				if w != nil || nw != nil {
					t.Fatalf("%s %s: one read has a plane, the other not", name, fam)
				}
				continue
			}
			whole, narrow := w.(*Plane), nw.(*Plane)
			if narrow.frontends == nil && len(whole.Frontends()) > 0 {
				t.Errorf("%s %s: the frontends are not the digest's", name, fam)
			}
			// The notes of the rules listing the frontends read, before
			// any other is read.
			scanned, err := Loader{}.LoadNarrow(nodeWith(text), fam)
			if err != nil {
				t.Fatal(err)
			}
			scanned.Frontends()
			narrow.Frontends()
			if got, want := narrow.Notes(), scanned.Notes(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: notes with the frontends listed:\n got %q\nwant %q", name, fam, got, want)
			}
			where := name + " " + fam + ", digested"
			sameAnswers(t, where, whole, narrow)
			sameState(t, where, whole.rs, narrow.rs)
			if got, want := narrow.Notes(), whole.Notes(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: notes once read whole:\n got %q\nwant %q", where, got, want)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d inputs digested", n)
	}
}

// TestDigestSetAside: a digest that cannot be read, or is of another
// document, is set aside with a note (silently for another version), and
// the document is scanned: the answers are the same.
func TestDigestSetAside(t *testing.T) {
	text := snapshottest.NFTablesJSON(30, 2)
	good := digested(t, text).Dumps[0].Index
	other := digested(t, snapshottest.NFTablesJSON(31, 2)).Dumps[0].Index
	newer := append([]byte(digestMagic), 99)
	shifted := digestWith(t, text, func(e []rawElem) { e[len(e)/2].start += 2 })
	renamed := digestWith(t, text, func(e []rawElem) {
		for i := range e {
			if e[i].kind == "rule" {
				e[i].nameStart--
				break
			}
		}
	})
	cases := map[string]struct {
		index []byte
		note  string
	}{
		"truncated":            {good[:len(good)/2], "damaged digest: byte "},
		"not a digest":         {[]byte("{}"), "damaged digest: it does not start as one"},
		"of another document":  {other, "damaged digest: it is of another document"},
		"element moved":        {shifted, "is not at bytes"},
		"name moved":           {renamed, "is not at bytes"},
		"of a later version":   {newer, ""},
		"with bytes left over": {append(append([]byte(nil), good...), 0), "bytes left over"},
	}
	whole, err := Loader{}.Load(nodeWith(text), "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range cases {
		ns := nodeWith(text)
		ns.Dumps[0].Index = c.index
		pl, err := Loader{}.LoadNarrow(ns, "IPv4")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := pl.(*Plane)
		if !reflect.DeepEqual(p.Frontends(), whole.Frontends()) {
			t.Errorf("%s: frontends differ from a full read's", name)
		}
		notes := strings.Join(p.Notes(), "\n")
		if c.note == "" && strings.Contains(notes, "index was not used") || c.note != "" && !strings.Contains(notes, c.note) {
			t.Errorf("%s: notes %q, want one with %q", name, notes, c.note)
		}
	}
}

// digestWith is the digest of text with its elements changed by change.
func digestWith(t *testing.T, text string, change func([]rawElem)) []byte {
	t.Helper()
	data := []byte(text)
	elems, ok := scanDocument(data)
	if !ok {
		t.Fatal("scan gave up")
	}
	change(elems)
	return writeDigest(data, elems, &digestFacts{})
}

// TestDigestDamagedNoPanic: a digest damaged anywhere is read or set
// aside, never a panic or an error of the document.
func TestDigestDamagedNoPanic(t *testing.T) {
	text := snapshottest.NFTablesJSON(3, 1)
	good := digested(t, text).Dumps[0].Index
	for i := len(digestMagic); i < len(good); i++ {
		for _, b := range []byte{0, 0x7f, 0xff} {
			bad := append([]byte(nil), good...)
			bad[i] = b
			ns := nodeWith(text)
			ns.Dumps[0].Index = bad
			if _, err := (Loader{}).LoadNarrow(ns, "IPv4"); err != nil {
				t.Fatalf("byte %d set to %#x: %v", i, b, err)
			}
		}
	}
}
