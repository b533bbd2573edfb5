package ipvs

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readSeed(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/seeds/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestParseSeeds reads the captures of real clusters: every virtual
// server with its real servers, weights and connection counts; an
// excerpt's elisions are said, not taken for servers.
func TestParseSeeds(t *testing.T) {
	mk, err := Parse(readSeed(t, "ipvsadm-ln.minikube.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range mk.Virtuals {
		got = append(got, v.String()+" "+strings.Repeat("*", len(v.Reals)))
	}
	want := []string{"TCP 10.96.0.1:443 rr *", "TCP 10.96.0.10:53 rr *", "TCP 10.96.0.10:9153 rr *", "TCP 10.109.134.113:8080 rr ***"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("minikube: %q, want %q", got, want)
	}
	if r := mk.Virtuals[0].Reals[0]; r.Addr.String() != "192.168.49.2:8443" || r.Forward != "Masq" || r.Weight != 1 || r.ActiveConn != 2 || r.Line != 5 {
		t.Errorf("minikube's API server real: %+v", r)
	}
	if len(mk.Notes) != 0 {
		t.Errorf("minikube notes: %q", mk.Notes)
	}
	bc, err := Parse(readSeed(t, "ipvsadm-ln.bootcamp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bc.Virtuals) != 1 || len(bc.Virtuals[0].Reals) != 3 || bc.Virtuals[0].Reals[0].InActConn != 3 {
		t.Errorf("bootcamp: %+v", bc.Virtuals)
	}
	if len(bc.Notes) != 2 || !strings.Contains(bc.Notes[0], "left out of this capture") {
		t.Errorf("bootcamp's elisions are not said: %q", bc.Notes)
	}
}

const listing = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.10:80 rr persistent 10800
  -> 10.244.1.5:8080              Masq    1      0          0
  -> 10.244.2.6:8080              Masq    0      1          4
UDP  10.96.0.10:53 wrr
  -> 10.244.1.7:53                Masq    3      0          0
  -> 10.244.2.8:53                Route   1      0          0
TCP  [fd00:10:96::a]:443 mh (mh-fallback,mh-port)
FWM  7 rr
  -> 10.244.3.9:0                 Tunnel  1      0          0
`

const saved = `-A -t 10.96.0.10:80 -s rr -p 10800
-a -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1
-a -t 10.96.0.10:80 -r 10.244.2.6:8080 -m -w 0
-A -u 10.96.0.10:53 -s wrr
-a -u 10.96.0.10:53 -r 10.244.1.7:53 -m -w 3
-a -u 10.96.0.10:53 -r 10.244.2.8:53 -g -w 1
-A -t [fd00:10:96::a]:443 -s mh -b mh-fallback,mh-port
-A -f 7 -s rr
-a -f 7 -r 10.244.3.9:0 -i -w 1
`

// TestParseForms: the listing and the save form of one table read the
// same, but for what only one of them prints (connection counts).
func TestParseForms(t *testing.T) {
	l, err := Parse(listing)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(saved)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(tb *Table) []Virtual {
		var out []Virtual
		for _, v := range tb.Virtuals {
			c := *v
			c.Line = 0
			c.Reals = nil
			for _, r := range v.Reals {
				r.Line, r.ActiveConn, r.InActConn = 0, 0, 0
				c.Reals = append(c.Reals, r)
			}
			out = append(out, c)
		}
		return out
	}
	if a, b := strip(l), strip(s); !reflect.DeepEqual(a, b) {
		t.Errorf("the forms differ:\nlisting %+v\nsave    %+v", a, b)
	}
	v := l.Virtuals[0]
	if v.Persistent != 10800 || v.Scheduler != "rr" || len(v.Reals) != 2 || v.Reals[1].Weight != 0 || v.Reals[1].InActConn != 4 {
		t.Errorf("first virtual server: %+v", v)
	}
	if v := l.Virtuals[2]; v.Addr.String() != "[fd00:10:96::a]:443" || !reflect.DeepEqual(v.SchedFlags, []string{"mh-fallback", "mh-port"}) {
		t.Errorf("IPv6 virtual server: %+v", v)
	}
	if v := l.Virtuals[3]; v.Key() != "FWM 7" || v.Reals[0].Forward != "Tunnel" {
		t.Errorf("firewall-mark service: %+v", v)
	}
}

// TestParseErrors: what cannot be read is an error naming the line and
// column; what is read but not understood is kept as a note.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"TCP  10.96.0.10 rr\n", "line 1 col 6: \"10.96.0.10\": want ADDRESS:PORT"},
		{"  -> 10.244.1.5:8080 Masq 1 0 0\n", "line 1 col 3: a real server before any virtual server"},
		{"TCP  10.96.0.10:80 rr\n  -> 10.244.1.5:8080 Masq heavy 0 0\n", "line 2 col 27: weight \"heavy\""},
		{"TCP  10.96.0.10:80 rr\n  -> 10.244.1.5:8080 Bridge 1 0 0\n", "line 2 col 22: forwarding \"Bridge\""},
		{"TCP  10.96.0.10:80 rr persistent forever\n", "line 1 col 34: persistent \"forever\""},
		{"Virtual servers:\n", "line 1 col 1: \"Virtual\": want a virtual server"},
		{"TCP  10.96.0.1:443 rr\n  -> 10.244.1.1:8443 Masq -1 0 0\n", "line 2 col 27: weight \"-1\""},
		{"-A -t 10.96.0.10:80 -s rr\n-a -t 10.96.0.11:80 -r 10.244.1.5:8080 -m\n", "line 2 col 7: a real server of TCP 10.96.0.11:80, which no -A line before declares"},
		{"-A -x 10.96.0.10:80\n", "line 1 col 4: \"-x\": want -t, -u, --sctp-service or -f"},
	} {
		_, err := Parse(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	tb, err := Parse("TCP  10.96.0.10:80 rr pe sip\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Notes) != 2 || !strings.Contains(tb.Notes[0], `"pe" not understood`) {
		t.Errorf("notes %q", tb.Notes)
	}
}

// TestListingReads: the table printed as ipvsadm -Ln reads back the same,
// sorted as ipvsadm sorts (IPv4 before IPv6 whatever the protocol: libipvs
// compares the family before the protocol).
func TestListingReads(t *testing.T) {
	tb, err := Parse(listing)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(tb.Listing())
	if err != nil {
		t.Fatalf("%v\n%s", err, tb.Listing())
	}
	var keys []string
	for _, v := range back.Virtuals {
		keys = append(keys, v.Key())
	}
	if want := "TCP 10.96.0.10:80,UDP 10.96.0.10:53,TCP [fd00:10:96::a]:443,FWM 7"; strings.Join(keys, ",") != want {
		t.Errorf("order %q, want %q", strings.Join(keys, ","), want)
	}
	for _, v := range back.Virtuals {
		orig := tb.findKey(v)
		if orig == nil || orig.String() != v.String() || len(orig.Reals) != len(v.Reals) {
			t.Errorf("%s read back as %s", orig, v)
		}
	}
}

// TestListingOrder: virtual servers are listed in ipvsadm's order, whose
// comparison wraps around: a real ipvsadm -Ln on the VM node listed
// 198.51.100.7 and 198.51.100.50 before 10.0.2.15, and UDP after TCP.
func TestListingOrder(t *testing.T) {
	tb, err := Parse(`UDP  10.96.50.19:53 rr
TCP  10.96.50.10:80 rr
TCP  10.0.2.15:30080 rr
TCP  198.51.100.50:80 rr
TCP  198.51.100.7:80 rr
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(tb.Listing(), "\n")[3:] {
		if l != "" {
			got = append(got, strings.Join(strings.Fields(l)[:2], " "))
		}
	}
	want := []string{"TCP 198.51.100.7:80", "TCP 198.51.100.50:80", "TCP 10.0.2.15:30080", "TCP 10.96.50.10:80", "UDP 10.96.50.19:53"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("listed %q, want %q", got, want)
	}
}

// parseErrorCase is a text a parser must refuse, with where and why.
type parseErrorCase struct {
	name, text string
	line, col  int
	msg        string
}

// wantParseErrors checks that parse refuses each case's text with a
// *ParseError at its line and column, saying its msg.
func wantParseErrors(t *testing.T, cases []parseErrorCase, parse func(string) error) {
	t.Helper()
	for _, c := range cases {
		var pe *ParseError
		if err := parse(c.text); !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a *ParseError", c.name, err)
			continue
		}
		if pe.Line != c.line || pe.Col != c.col || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want line %d col %d: …%s…", c.name, pe, c.line, c.col, c.msg)
		}
	}
}
