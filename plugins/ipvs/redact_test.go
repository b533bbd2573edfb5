package ipvs

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

func TestRedacted(t *testing.T) {
	for s, want := range map[string]bool{
		"<ipv4-public-prefix>.20:3129": true, "10.x.x.5:80": true, "XX.XX.XX.XX:443": true, "***:443": true,
		"10.8.9.0:30151": false, "10.96.0.1:443": false, "[fd00::1]:443": false, "example:80": false, "10.96.0:80": false,
	} {
		if got := redacted(s); got != want {
			t.Errorf("redacted(%q) = %v, want %v", s, got, want)
		}
	}
}

// redactedTable is made of testdata/wild/26's lines, with one real
// server's address hidden as well.
const redactedTable = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  <ipv4-public-prefix>.23:80 rr
  -> 10.8.3.90:80                 Masq    1      0          0
  -> 10.8.19.253:80               Masq    1      0          0
TCP  10.8.9.0:30394 rr
  -> 10.8.19.203:3129             Masq    1      0          0
TCP  10.8.9.0:31662 rr
  -> 10.8.3.199:80                Masq    1      0          0
  -> 10.x.x.9:80                  Masq    1      0          0
`

// TestParseRedacted: testdata/wild/26's lines. A virtual server whose
// address was redacted is left out with its real servers and a note
// naming its line; the lines after it are read; a real server whose
// address was redacted is a backend not known, its share kept.
func TestParseRedacted(t *testing.T) {
	tb, err := Parse(redactedTable)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loadShownOf(t, "IPv4", CollectorIPVS, redactedTable).Unchecked(), "redacted 2 of") {
		t.Error("the loader lost the redactions")
	}
	if len(tb.Virtuals) != 2 || tb.Virtuals[0].Key() != "TCP 10.8.9.0:30394" || len(tb.Virtuals[0].Reals) != 1 {
		t.Fatalf("virtual servers: %+v", tb.Virtuals)
	}
	if len(tb.Notes) != 2 || !strings.HasPrefix(tb.Notes[0], "line 4: virtual server TCP <ipv4-public-prefix>.23:80") || !strings.HasPrefix(tb.Notes[1], "line 11: a real server of TCP 10.8.9.0:31662") {
		t.Errorf("notes: %q", tb.Notes)
	}
	if tb.redactions() != 2 {
		t.Errorf("redactions %d", tb.redactions())
	}
	p := &Plane{table: tb, family: "IPv4"}
	if !strings.Contains(p.Unchecked(), "redacted 2 of the IPVS table's addresses") {
		t.Errorf("Unchecked: %q", p.Unchecked())
	}
	br := walk(p, "tcp", "10.8.9.0:31662", dataplane.WalkOptions{})
	if len(br) != 2 || br[0].DNAT != "10.8.3.199:80" || br[0].Probability != 0.5 ||
		br[1].Verdict != dataplane.Missing || br[1].Probability != 0.5 || !strings.Contains(br[1].Missing, "line 11") || br[1].DNAT != "" {
		t.Errorf("walk: %+v", br)
	}
	// The save form: the same.
	tb, err = Parse("-A -t <redacted>:80 -s rr\n-a -t <redacted>:80 -r 10.8.3.90:80 -m -w 1\n-A -t 10.8.9.0:31662 -s rr\n-a -t 10.8.9.0:31662 -r 10.x.x.9:80 -m -w 1\n")
	if err != nil || len(tb.Virtuals) != 1 || len(tb.Virtuals[0].Reals) != 1 || !tb.Virtuals[0].Reals[0].Redacted || tb.redactions() != 2 {
		t.Errorf("save form: %+v, %v", tb, err)
	}
	// An address that is wrong, not hidden, is still an error.
	if _, err := Parse("TCP  10.8.9:80 rr\n"); err == nil {
		t.Error("a bad address read")
	}
}

// FuzzParse: no text makes the reader panic, and what it keeps has an
// address (or a firewall mark), or says it was redacted.
func FuzzParse(f *testing.F) {
	f.Add(redactedTable)
	f.Add("-A -t <redacted>:80 -s rr\n-a -t 10.0.0.1:80 -r 10.x.x.9:80 -m -w 1\n")
	f.Add("TCP  10.96.0.1:443 rr\n  -> ***:6443 Masq 1 0 0\n...\nFWM  7 rr\n")
	f.Fuzz(func(t *testing.T, text string) {
		tb, err := Parse(text)
		if err != nil {
			return
		}
		for _, v := range tb.Virtuals {
			if v.Protocol != "" && !v.Addr.IsValid() {
				t.Errorf("virtual server without an address: %+v", v)
			}
			for _, r := range v.Reals {
				if r.Addr.IsValid() == r.Redacted {
					t.Errorf("real server %+v: an address and redacted, or neither", r)
				}
			}
		}
	})
}

// FuzzLoadShown: no ipset text given without the IPVS table makes the
// plane panic.
func FuzzLoadShown(f *testing.F) {
	f.Add(sealosSets)
	f.Add("create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30000-30010\n")
	f.Fuzz(func(t *testing.T, text string) {
		ns := &snapshot.NodeState{Name: "n1", Dumps: []snapshot.Dump{{Collector: CollectorIPSet, Text: text}}}
		pl, err := Loader{}.Load(ns, "IPv4")
		if err != nil || pl == nil {
			return
		}
		_ = pl.Frontends()
		_ = pl.Notes()
	})
}
