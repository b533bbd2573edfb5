//go:build linux

package conntrack

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ti-mo/netfilter"
	"golang.org/x/sys/unix"
)

// withTraffic sets up a namespace where 10.96.0.10:53/udp and
// 10.96.0.11:80/tcp are DNATed (iptables, as kube-proxy does) to a "pod"
// 10.244.1.5 that echoes, sends udp and tcp through them, and adds a few
// entries without traffic. The tcp connections stay open until the test
// ends.
func withTraffic(t *testing.T) testNS {
	ns := newNetns(t, "iptables", "conntrack", "cat", "sh")
	for _, args := range [][]string{
		{"ip", "addr", "add", "10.0.0.1/24", "dev", "lo"},
		{"ip", "addr", "add", "10.244.1.5/32", "dev", "lo"},
		{"ip", "route", "add", "10.96.0.0/12", "dev", "lo", "src", "10.0.0.1"},
		{"sh", "-c", "echo 1 > /proc/sys/net/netfilter/nf_conntrack_acct"},
		{"iptables", "-t", "nat", "-A", "OUTPUT", "-d", "10.96.0.10", "-p", "udp", "--dport", "53", "-j", "DNAT", "--to-destination", "10.244.1.5:5353"},
		{"iptables", "-t", "nat", "-A", "OUTPUT", "-d", "10.96.0.11", "-p", "tcp", "--dport", "80", "-j", "DNAT", "--to-destination", "10.244.1.5:8080"},
	} {
		ns.run(t, args...)
	}
	var conns []io.Closer
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	ns.do(t, func() error {
		// Sockets keep the namespace they were made in.
		pc, err := net.ListenPacket("udp4", "10.244.1.5:5353")
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp4", "10.244.1.5:8080")
		if err != nil {
			pc.Close()
			return err
		}
		conns = append(conns, pc, ln)
		go echoUDP(pc)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); c.Close() }()
			}
		}()
		for i := 0; i < 3; i++ {
			for _, addr := range []string{"udp4/10.96.0.10:53", "tcp4/10.96.0.11:80"} {
				network, target, _ := strings.Cut(addr, "/")
				c, err := roundTrip(network, target)
				if err != nil {
					return err
				}
				conns = append(conns, c)
			}
		}
		return nil
	})
	ns.create(t,
		Entry{Protocol: "sctp", State: "ESTABLISHED", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.12"), 5000, 9999}, Reply: Tuple{ip("10.244.1.7"), ip("10.0.0.1"), 9999, 5000}, Timeout: 600, Assured: true},
		Entry{Protocol: "icmp", Unreplied: true, Orig: Tuple{Src: ip("10.0.0.1"), Dst: ip("10.0.0.9")}, ICMP: ICMP{Type: 8, ID: 7}, Timeout: 600},
		Entry{Protocol: "udp", Orig: Tuple{ip("fd00::1"), ip("fd00:96::10"), 5000, 53}, Reply: Tuple{ip("fd00:244::5"), ip("fd00::1"), 5353, 5000}, Timeout: 600, Zone: 7, Mark: 9},
	)
	return ns
}

func echoUDP(pc net.PacketConn) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo(buf[:n], from)
	}
}

// roundTrip sends "ping" to addr and waits for the echo.
func roundTrip(network, addr string) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4)
	_, err = c.Write([]byte("ping"))
	if err == nil {
		_, err = io.ReadFull(c, buf)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s %s: %w", network, addr, err)
	}
	return c, nil
}

func TestTextMatchesDump(t *testing.T) {
	ns := withTraffic(t).record(t, "traffic", "withTraffic (traffic_test.go): udp and tcp through iptables DNAT (IPv4), with nf_conntrack_acct; sctp, icmp and IPv6 entries made with Create")
	textMatchesDump(t, ns)
}

// textMatchesDump compares a dump of withTraffic's table with the text of
// conntrack -L and /proc/net/nf_conntrack.
func textMatchesDump(t *testing.T, ns testNS) {
	texts := map[string]string{}
	for slug, cmd := range map[string]string{
		"conntrack-L":          "conntrack -L",
		"conntrack-L-extended": "conntrack -L -o extended",
		"conntrack-L-id":       "conntrack -L -o extended,id",
		"proc":                 "cat /proc/net/nf_conntrack",
	} {
		text, ok := ns.tool(t, slug, cmd)
		if !ok {
			t.Fatalf("no %s", cmd)
		}
		texts[cmd] = text
	}
	dumped, _ := ns.dumpAll(t, Filter{})
	if len(dumped) != 3+3+3 {
		t.Errorf("Dump: %d entries, want 9", len(dumped))
	}
	for source, text := range texts {
		if !strings.Contains(text, "flow entries have been shown") && strings.HasPrefix(source, "conntrack") {
			t.Errorf("%s: no summary line in %q", source, text)
		}
		textMatchesEntries(t, source, text, dumped)
	}
	// The DNATed flows: orig dst the "ClusterIP", reply src the "pod".
	nat, _ := ns.dumpAll(t, Filter{OrigDst: []netip.Addr{ip("10.96.0.10"), ip("10.96.0.11")}, ReplySrc: []netip.Addr{ip("10.244.1.5")}})
	if len(nat) != 6 {
		t.Fatalf("NATed entries: %d, want 6", len(nat))
	}
	for _, e := range nat {
		if !e.Accounting || e.OrigPackets == 0 || e.ReplyPackets == 0 || e.Unreplied || e.Reply.SrcPort != map[string]uint16{"udp": 5353, "tcp": 8080}[e.Protocol] {
			t.Errorf("NATed entry without traffic counters or reply: %s", Format(e))
		}
		if e.Protocol == "tcp" && (e.State != "ESTABLISHED" || !e.Assured) {
			t.Errorf("tcp entry: %s", Format(e))
		}
	}
}

// TestKernelIPv6AddressFilter records why IPv6 addresses are filtered in
// user space only: the kernel's IPv6 address match is inverted.
func TestKernelIPv6AddressFilter(t *testing.T) {
	ns := newNetns(t)
	ns.create(t,
		Entry{Protocol: "udp", Orig: Tuple{ip("fd00::1"), ip("fd00::2"), 1, 2}, Timeout: 60},
		Entry{Protocol: "udp", Orig: Tuple{ip("fd00::1"), ip("fd00::3"), 1, 2}, Timeout: 60},
	)
	// Send an IPv6 orig-dst CTA_FILTER, which kernelFilter never does.
	ae := netfilter.NewAttributeEncoder()
	putCTAFilter(ae, Tuple{Dst: ip("fd00::2")}, Tuple{}, 0, filterIPDst, 0)
	raw, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got := rawDump(t, ns, unix.AF_INET6, raw)
	switch {
	case len(got) == 1 && got[0].Orig.Dst == ip("fd00::3"):
		t.Log("kernel IPv6 address filter is inverted (returns the non-matching entry): keep IPv6 addresses out of the kernel filter")
	case len(got) == 1 && got[0].Orig.Dst == ip("fd00::2"):
		t.Log("kernel IPv6 address filter works on this kernel")
	default:
		t.Errorf("unexpected kernel filter result: %+v", got)
	}
}

// textMatchesEntries says whether text (conntrack -L or
// /proc/net/nf_conntrack, read just before the dump) has the entries
// dumped.
func textMatchesEntries(t *testing.T, source, text string, dumped []Entry) {
	t.Helper()
	parsed, n, err := ParseText(source, strings.NewReader(text), 0)
	if err != nil || n != len(dumped) {
		t.Errorf("%s: %d entries, %v; want %d\n%s", source, n, err, len(dumped), text)
		return
	}
	byKey := map[key]Entry{}
	for _, e := range dumped {
		byKey[keyOf(e)] = e
	}
	for _, p := range parsed {
		d, ok := byKey[keyOf(p)]
		if !ok {
			t.Errorf("%s: entry not in Dump: %s", source, p.Line)
			continue
		}
		if p.ID != 0 && p.ID != d.ID || p.Timeout < d.Timeout || p.Timeout > d.Timeout+10 {
			t.Errorf("%s: id %d timeout %d, Dump: id %d timeout %d", source, p.ID, p.Timeout, d.ID, d.Timeout)
		}
		if comparable(p) != comparable(d) {
			t.Errorf("%s:\n text %+v\n dump %+v", source, comparable(p), comparable(d))
		}
	}
}

// sameAsPrinted says whether got are the entries conntrack printed
// (printed, -o extended,id), ids included.
func sameAsPrinted(t *testing.T, got, printed []Entry) {
	t.Helper()
	if len(got) != len(printed) {
		t.Errorf("Dump: %d entries, conntrack -L printed %d", len(got), len(printed))
	}
	for _, p := range printed {
		i := slices.IndexFunc(got, func(e Entry) bool { return e.ID == p.ID })
		if i < 0 || comparable(got[i]) != comparable(p) {
			t.Errorf("conntrack -L printed %s, not in the dump", p.Line)
		}
	}
}
