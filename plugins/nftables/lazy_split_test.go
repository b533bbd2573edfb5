package nftables

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// scanInOne is scanDocument on one CPU: one scan from the start.
func scanInOne(t *testing.T, data []byte) ([]rawElem, bool) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if splitPoint(data, 0) >= 0 {
		t.Fatal("split on one CPU")
	}
	return scanDocument(data)
}

// TestScanSplit: a document scanned in two parts gives the elements (or
// the failure) of one scan from its start, whether or not the text where
// the second part starts is an element of the array.
func TestScanSplit(t *testing.T) {
	// Split on any machine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	big := snapshottest.NFTablesJSON(2000, 10)
	if len(big) < minSplit {
		t.Fatalf("generated document of %d bytes: too small to split", len(big))
	}
	// ruleAt is where the rule element before i starts.
	ruleAt := func(i int) int { return strings.LastIndex(big[:i], string(ruleStart)) + len(", ") }
	mid := len(big) / 2
	// A rule holding the text a split looks for, past the middle of the
	// document it is put in: the guess is inside an element.
	at := ruleAt(mid)
	pad := strings.Repeat("p", 2*(mid-at)+1000)
	nested := `{"rule": {"family": "ip", "table": "kube-proxy", "chain": "filter-input", "comment": "` + pad +
		`", "expr": [{"counter": null}, {"rule": {"x": 1}}]}}, `
	cases := map[string]struct {
		doc   string
		ok    bool
		split bool // the guess is an element of the array
	}{
		"rules past the middle": {doc: big, ok: true, split: true},
		"guess inside a rule":   {doc: big[:at] + nested + big[at:], ok: true},
		"guess after the array": {
			doc: `{"nftables": [{"metainfo": {"json_schema_version": 1}}], "other": [` +
				strings.Repeat(`{"a": 1}, `, minSplit/8) + `{"b": 2}, {"rule": {"x": 1}}` + strings.Repeat(`, {"a": 1}`, minSplit/8) + `]}`,
			ok: true,
		},
		"malformed past the guess": {doc: big[:ruleAt(len(big)*3/4)] + `{"rule": {"family": "ip"]}, ` + big[ruleAt(len(big)*3/4):]},
		"malformed before it":      {doc: big[:ruleAt(mid/2)] + `{"rule": [}, ` + big[ruleAt(mid/2):]},
	}
	for name, c := range cases {
		data := []byte(c.doc)
		split := splitPoint(data, 0)
		if split < 0 {
			t.Fatalf("%s: no split", name)
		}
		if c.split {
			s := &scanner{data: data, pos: len(`{"nftables": [`)}
			if _, ok, landed := s.elements(nil, split); !ok || !landed {
				t.Fatalf("%s: the scan from the start does not reach the split (ok %v)", name, ok)
			}
		}
		got, ok := scanDocument(data)
		want, wantOK := scanInOne(t, data)
		if ok != c.ok || wantOK != c.ok {
			t.Errorf("%s: ok %v, in one scan %v, want %v", name, ok, wantOK, c.ok)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d elements, in one scan %d", name, len(got), len(want))
			continue
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s: element %d is %+v, in one scan %+v", name, i, got[i], want[i])
				break
			}
		}
	}
}
