package conntrack

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// Lines as conntrack 1.4.7 and /proc print them (kernel 6.18).
const (
	plainUDPv6 = `udp      17 299 src=fd00::1 dst=fd00::2 sport=1 dport=2 packets=0 bytes=0 [UNREPLIED] src=fd00::2 dst=fd00::1 sport=2 dport=1 packets=0 bytes=0 mark=0 delta-time=0 use=1`
	extICMPID  = `ipv4     2 icmp     1 29 src=10.0.0.1 dst=10.0.0.2 type=8 code=0 id=77 packets=0 bytes=0 [UNREPLIED] src=10.0.0.2 dst=10.0.0.1 type=0 code=0 id=77 packets=0 bytes=0 mark=0 delta-time=0 use=1 id=3189612552`
	tsTCP      = `tcp      6 299 ESTABLISHED src=10.0.0.1 dst=10.96.0.11 sport=1234 dport=80 packets=3 bytes=180 src=10.96.0.11 dst=10.0.0.1 sport=80 dport=1234 packets=2 bytes=120 [ASSURED] mark=0 delta-time=4 [start=Sat Nov 21 12:13:10 2026] use=1 id=1662715568`
	procUDPv6  = `ipv6     10 udp      17 299 src=fd00:0000:0000:0000:0000:0000:0000:0001 dst=fd00:0000:0000:0000:0000:0000:0000:0002 sport=1 dport=2 [UNREPLIED] src=fd00:0000:0000:0000:0000:0000:0000:0002 dst=fd00:0000:0000:0000:0000:0000:0000:0001 sport=2 dport=1 mark=0 zone=0 use=2`
	procNAT    = `ipv4     2 udp      17 29 src=10.0.0.1 dst=10.96.0.10 sport=41000 dport=53 packets=1 bytes=33 src=10.244.1.5 dst=10.0.0.1 sport=5353 dport=41000 packets=1 bytes=33 [ASSURED] mark=7 secctx=system_u:object_r:unlabeled_t:s0 zone=3 use=2`
	extSCTP    = `ipv4     2 sctp     132 29 ESTABLISHED src=10.0.0.1 dst=10.0.0.3 sport=5 dport=6 src=10.0.0.3 dst=10.0.0.1 sport=6 dport=5 [OFFLOAD] [ASSURED] mark=0 labels=0x1 helper=foo use=1 id=5`
	summary    = `conntrack v1.4.7 (conntrack-tools): 6 flow entries have been shown.`
)

func TestParseTextSamples(t *testing.T) {
	in := strings.Join([]string{plainUDPv6, extICMPID, "", tsTCP + "\r", procUDPv6, procNAT, extSCTP, summary, ""}, "\n")
	got, n, err := ParseText("sample", strings.NewReader(in), 0)
	if err != nil || n != 6 || len(got) != 6 {
		t.Fatalf("ParseText: %d entries, total %d, %v", len(got), n, err)
	}
	udp6 := Entry{Family: IPv6, Protocol: "udp", Timeout: 299, Unreplied: true,
		Orig: Tuple{ip("fd00::1"), ip("fd00::2"), 1, 2}, Reply: Tuple{ip("fd00::2"), ip("fd00::1"), 2, 1}}
	udp6acct := udp6
	udp6acct.Accounting = true
	want := []Entry{
		udp6acct,
		{Family: IPv4, Protocol: "icmp", Timeout: 29, Unreplied: true, ID: 3189612552, Accounting: true,
			Orig: Tuple{Src: ip("10.0.0.1"), Dst: ip("10.0.0.2")}, Reply: Tuple{Src: ip("10.0.0.2"), Dst: ip("10.0.0.1")},
			ICMP: ICMP{Type: 8, ID: 77}},
		{Family: IPv4, Protocol: "tcp", State: "ESTABLISHED", Timeout: 299, Assured: true, ID: 1662715568,
			Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.11"), 1234, 80}, Reply: Tuple{ip("10.96.0.11"), ip("10.0.0.1"), 80, 1234},
			Accounting: true, OrigPackets: 3, OrigBytes: 180, ReplyPackets: 2, ReplyBytes: 120},
		udp6,
		{Family: IPv4, Protocol: "udp", Timeout: 29, Assured: true, Mark: 7, Zone: 3,
			Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.10"), 41000, 53}, Reply: Tuple{ip("10.244.1.5"), ip("10.0.0.1"), 5353, 41000},
			Accounting: true, OrigPackets: 1, OrigBytes: 33, ReplyPackets: 1, ReplyBytes: 33},
		{Family: IPv4, Protocol: "sctp", State: "ESTABLISHED", Timeout: 29, Assured: true, ID: 5,
			Orig: Tuple{ip("10.0.0.1"), ip("10.0.0.3"), 5, 6}, Reply: Tuple{ip("10.0.0.3"), ip("10.0.0.1"), 6, 5}},
	}
	for i := range want {
		if got[i].Line == "" || strings.HasSuffix(got[i].Line, "\r") {
			t.Errorf("entry %d: Line %q", i, got[i].Line)
		}
		got[i].Line = ""
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestParseTextLimit(t *testing.T) {
	in := strings.Repeat(tsTCP+"\n", 5)
	got, n, err := ParseText("x", strings.NewReader(in), 2)
	if err != nil || n != 5 || len(got) != 2 {
		t.Fatalf("limit 2: %d entries, total %d, %v", len(got), n, err)
	}
	if _, _, err := ParseText("x", strings.NewReader(in), -1); err == nil {
		t.Error("negative limit accepted")
	}
}

func TestParseTextErrors(t *testing.T) {
	bad := map[string]string{
		"words":           "hello world",
		"no timeout":      "tcp      6",
		"bad timeout":     "tcp      6 abc ESTABLISHED src=10.0.0.1",
		"name/number":     strings.Replace(tsTCP, "tcp      6", "tcp      17", 1),
		"unknown proto":   strings.Replace(tsTCP, "tcp      6", "foo      6", 1),
		"family":          "ipv6     10 " + tsTCP,
		"family number":   "ipv4     10 " + tsTCP,
		"one tuple":       "tcp 6 10 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2 mark=0 use=1",
		"three tuples":    strings.Replace(tsTCP, "[ASSURED]", "src=1.1.1.1 dst=1.1.1.2 sport=1 dport=2", 1),
		"glued lines":     tsTCP + " " + extICMPID,
		"bad address":     strings.Replace(tsTCP, "dst=10.96.0.11", "dst=10.96.0.300", 1),
		"zoned address":   strings.Replace(plainUDPv6, "dst=fd00::2", "dst=fd00::2%eth0", 1),
		"bad port":        strings.Replace(tsTCP, "dport=80", "dport=70000", 1),
		"empty port":      strings.Replace(tsTCP, "dport=80", "dport=", 1),
		"mixed families":  strings.Replace(tsTCP, "dst=10.0.0.1", "dst=fd00::1", 1),
		"unterminated":    strings.Replace(tsTCP, "[ASSURED]", "[ASSURED", 1),
		"half counters":   strings.Replace(tsTCP, " bytes=120", "", 1),
		"counters once":   strings.Replace(strings.Replace(tsTCP, " packets=2", "", 1), " bytes=120", "", 1),
		"mark twice":      strings.Replace(tsTCP, "mark=0", "mark=0 mark=1", 1),
		"bad mark":        strings.Replace(tsTCP, "mark=0", "mark=x", 1),
		"no use":          strings.Replace(tsTCP, "use=1", "", 1),
		"stray word":      strings.Replace(tsTCP, "mark=0", "mark=0 garbage", 1),
		"lower state":     strings.Replace(tsTCP, "ESTABLISHED", "established", 1),
		"icmp no id":      strings.Replace(extICMPID, "type=0 code=0 id=77", "type=0 code=0", 1),
		"other tool":      "conntrack v1.4.7 (conntrack-tools): Operation failed: invalid parameters",
		"ports on icmp":   strings.Replace(extICMPID, "type=8", "sport=8", 1),
		"dst outside":     tsTCP + " dst=1.2.3.4",
		"packets outside": tsTCP + " packets=4",
	}
	for name, line := range bad {
		in := tsTCP + "\n\n" + line + "\n" + tsTCP + "\n"
		got, n, err := ParseText("dump.txt", strings.NewReader(in), 0)
		if err == nil {
			t.Errorf("%s: no error for %q", name, line)
			continue
		}
		if !strings.HasPrefix(err.Error(), "dump.txt:3: ") || !strings.Contains(err.Error(), clip(strings.TrimSpace(line))[:10]) {
			t.Errorf("%s: error does not name input, line and text: %v", name, err)
		}
		if n != 1 || len(got) != 1 {
			t.Errorf("%s: %d entries, total %d before the bad line; want 1", name, len(got), n)
		}
	}
	long := strings.Repeat("x", maxLine+1)
	if _, _, err := ParseText("big", strings.NewReader(tsTCP+"\n"+long), 0); err == nil || !strings.HasPrefix(err.Error(), "big:2: ") {
		t.Errorf("over-long line: %v", err)
	}
}

// TestParseTextTruncated cuts real lines at every byte: a line that stops
// before its use= field is an error, never a shorter entry.
func TestParseTextTruncated(t *testing.T) {
	for _, line := range []string{plainUDPv6, extICMPID, tsTCP, procUDPv6, procNAT, extSCTP} {
		stop := strings.Index(line, " use=") + len(" use=") + 1
		for cut := 1; cut < stop; cut++ {
			if _, _, err := ParseText("cut", strings.NewReader(line[:cut]), 0); err == nil {
				t.Errorf("no error for %q", line[:cut])
			}
		}
	}
}

func randomEntry(r *rand.Rand) Entry {
	protos := []string{"tcp", "udp", "sctp", "icmp", "icmpv6", "udplite", "dccp", "gre", "200"}
	e := Entry{Protocol: protos[r.IntN(len(protos))], Timeout: r.Uint32(),
		Assured: r.IntN(2) == 0, Unreplied: r.IntN(2) == 0, Mark: uint32(r.IntN(3)) * r.Uint32(),
		Zone: uint16(r.IntN(2) * r.IntN(65536)), ID: uint32(r.IntN(2)) * r.Uint32()}
	v6 := e.Protocol == "icmpv6" || e.Protocol != "icmp" && r.IntN(2) == 0
	addr := func() netip.Addr {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		if v6 {
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	e.Orig = Tuple{Src: addr(), Dst: addr()}
	e.Reply = Tuple{Src: addr(), Dst: addr()}
	e.Family = familyOf(e.Orig.Src)
	n, _ := protoNumber(e.Protocol)
	if hasPorts(n) {
		e.Orig.SrcPort, e.Orig.DstPort = uint16(r.Uint32()), uint16(r.Uint32())
		e.Reply.SrcPort, e.Reply.DstPort = uint16(r.Uint32()), uint16(r.Uint32())
	}
	if isICMP(n) {
		e.ICMP = ICMP{Type: uint8(r.Uint32()), Code: uint8(r.Uint32()), ID: uint16(r.Uint32())}
	}
	if states := stateTable(n); states != nil {
		e.State = states[r.IntN(len(states))]
	}
	if r.IntN(2) == 0 {
		e.Accounting = true
		e.OrigPackets, e.OrigBytes, e.ReplyPackets, e.ReplyBytes = r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()
	}
	return e
}

func TestFormatRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		e := randomEntry(r)
		line := Format(e)
		got, n, err := ParseText(fmt.Sprintf("entry%d", i), strings.NewReader(line), 0)
		if err != nil || n != 1 {
			t.Fatalf("ParseText(Format(%+v)) = %d, %v\n%s", e, n, err, line)
		}
		if got[0].Line != line {
			t.Errorf("Line %q, want %q", got[0].Line, line)
		}
		got[0].Line = ""
		if got[0] != e {
			t.Fatalf("round trip:\n got %+v\nwant %+v\n%s", got[0], e, line)
		}
	}
}

func FuzzParseText(f *testing.F) {
	for _, s := range []string{plainUDPv6, extICMPID, tsTCP, procUDPv6, procNAT, extSCTP, summary,
		"unknown  200 10 src=1.2.3.4 dst=1.2.3.5 src=1.2.3.5 dst=1.2.3.4 mark=0 use=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, n, err := ParseText("fuzz", strings.NewReader(in), 0)
		if err == nil && n != len(got) {
			t.Fatalf("total %d, %d entries", n, len(got))
		}
		for _, e := range got {
			again, _, err := ParseText("again", strings.NewReader(Format(e)), 0)
			if err != nil {
				t.Fatalf("Format of parsed %q does not parse: %v\n%s", e.Line, err, Format(e))
			}
			again[0].Line, e.Line = "", ""
			if again[0] != e {
				t.Fatalf("re-parse differs:\n got %+v\nwant %+v", again[0], e)
			}
		}
	})
}
