//go:build linux

package conntrack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testEntries is a small table: NATed udp (a ClusterIP DNATed to pods),
// tcp, sctp, icmp, IPv6, and a zone.
func testEntries() []Entry {
	return []Entry{
		{Protocol: "udp", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.10"), 40001, 53}, Reply: Tuple{ip("10.244.1.5"), ip("10.0.0.1"), 5353, 40001}, Timeout: 300, Assured: true},
		{Protocol: "udp", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.10"), 40002, 53}, Reply: Tuple{ip("10.244.1.6"), ip("10.0.0.1"), 5353, 40002}, Timeout: 300},
		{Protocol: "udp", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.10"), 40003, 53}, Timeout: 300, Unreplied: true}, // no endpoints: reply src = VIP
		{Protocol: "tcp", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.10"), 40004, 53}, Reply: Tuple{ip("10.244.1.5"), ip("10.0.0.1"), 5353, 40004}, Timeout: 300, State: "ESTABLISHED", Assured: true},
		{Protocol: "udp", Orig: Tuple{ip("10.0.0.2"), ip("10.96.0.11"), 40005, 80}, Reply: Tuple{ip("10.244.1.5"), ip("10.0.0.2"), 8080, 40005}, Timeout: 300, Mark: 0x4000},
		{Protocol: "udp", Orig: Tuple{ip("10.0.0.2"), ip("10.96.0.11"), 40006, 80}, Timeout: 300, Zone: 5},
		{Protocol: "sctp", Orig: Tuple{ip("10.0.0.1"), ip("10.96.0.12"), 40007, 9999}, Reply: Tuple{ip("10.244.1.7"), ip("10.0.0.1"), 9999, 40007}, Timeout: 300, State: "ESTABLISHED"},
		{Protocol: "icmp", Orig: Tuple{Src: ip("10.0.0.1"), Dst: ip("10.96.0.10")}, ICMP: ICMP{Type: 8, ID: 77}, Timeout: 30, Unreplied: true},
		{Protocol: "udp", Orig: Tuple{ip("fd00::1"), ip("fd00:96::10"), 40008, 53}, Reply: Tuple{ip("fd00:244::5"), ip("fd00::1"), 5353, 40008}, Timeout: 300},
		{Protocol: "udp", Orig: Tuple{ip("fd00::1"), ip("fd00:96::10"), 40009, 53}, Reply: Tuple{ip("fd00:244::6"), ip("fd00::1"), 5353, 40009}, Timeout: 300},
		{Protocol: "icmpv6", Orig: Tuple{Src: ip("fd00::1"), Dst: ip("fd00:96::10")}, ICMP: ICMP{Type: 128, ID: 9}, Timeout: 30},
	}
}

// key identifies an entry across sources.
type key struct {
	proto      string
	orig       Tuple
	zone       uint16
	icmpID     uint16
	icmpTypeID uint8
}

func keyOf(e Entry) key { return key{e.Protocol, e.Orig, e.Zone, e.ICMP.ID, e.ICMP.Type} }

// comparable returns e without the fields that differ between reads.
func comparable(e Entry) Entry {
	e.Line, e.Timeout, e.ID = "", 0, 0
	return e
}

// expected completes a created entry the way the kernel reports it.
func expected(e Entry) Entry {
	e.Family = familyOf(e.Orig.Src)
	if e.Reply == (Tuple{}) {
		e.Reply = Tuple{e.Orig.Dst, e.Orig.Src, e.Orig.DstPort, e.Orig.SrcPort}
	}
	if e.Protocol == "tcp" && e.State == "" {
		e.State = "NONE"
	}
	return comparable(e)
}

func TestCreateDumpDeleteCount(t *testing.T) {
	ns := newNetns(t).record(t, "create-dump-delete-count", "the entries of testEntries (kernel_test.go, IPv4 and IPv6), made with Create; then deletes")
	createDumpDeleteCount(t, ns)
}

// createDumpDeleteCount creates testEntries in ns, compares a dump with
// them and with conntrack -L, and deletes and counts.
func createDumpDeleteCount(t *testing.T, ns testNS) {
	ctx := context.Background()
	want := testEntries()
	ns.create(t, want...)
	text, hasText := ns.tool(t, "conntrack-L-id", "conntrack -L -o extended,id")
	got, st := ns.dumpAll(t, Filter{})
	if st.Seen != len(want) || st.Passed != len(want) || st.KernelFilter {
		t.Errorf("stats %+v, want %d seen and passed, no kernel filter", st, len(want))
	}
	if hasText {
		textMatchesEntries(t, "conntrack -L -o extended,id", text, got)
	}
	byKey := map[key]Entry{}
	for _, e := range got {
		if e.Timeout == 0 || e.Timeout > 300 || e.ID == 0 || e.Line != "" {
			t.Errorf("timeout %d, id %d, line %q: %+v", e.Timeout, e.ID, e.Line, e)
		}
		byKey[keyOf(e)] = e
	}
	for _, w := range want {
		if g, ok := byKey[keyOf(w)]; !ok || comparable(g) != expected(w) {
			t.Errorf("dump:\n got %+v\nwant %+v", comparable(g), expected(w))
		}
	}

	victim := byKey[keyOf(want[1])]
	ns.do(t, func() error {
		if n, err := ns.tab.count(ctx); err != nil || n != len(want) {
			return errors.Join(err, fmt.Errorf("Count = %d, want %d", n, len(want)))
		}
		if err := ns.tab.create(ctx, want[:1]); !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("Create of an existing entry: %v, want EEXIST", err)
		}
		stale := victim
		stale.ID++
		if ok, err := ns.tab.delete(ctx, stale); ok || err != nil {
			return fmt.Errorf("Delete with another id: %v, %v; want false, nil", ok, err)
		}
		if ok, err := ns.tab.delete(ctx, victim); !ok || err != nil {
			return fmt.Errorf("Delete: %v, %v; want true, nil", ok, err)
		}
		if ok, err := ns.tab.delete(ctx, victim); ok || err != nil {
			return fmt.Errorf("Delete again: %v, %v; want false, nil (already gone)", ok, err)
		}
		zoned := byKey[keyOf(want[5])]
		zoned.Zone = 0
		if ok, err := ns.tab.delete(ctx, zoned); ok || err != nil {
			return fmt.Errorf("Delete in the wrong zone: %v, %v; want false, nil", ok, err)
		}
		if n, err := ns.tab.count(ctx); err != nil || n != len(want)-1 {
			return errors.Join(err, fmt.Errorf("Count after Delete = %d, want %d", n, len(want)-1))
		}
		return nil
	})
	after, _ := ns.dumpAll(t, Filter{})
	wantAfter := slices.DeleteFunc(slices.Clone(got), func(e Entry) bool { return e.ID == victim.ID })
	if len(after) != len(wantAfter) {
		t.Fatalf("after Delete: %d entries, want %d", len(after), len(wantAfter))
	}
	for _, e := range after {
		if e.ID == victim.ID || !slices.ContainsFunc(wantAfter, func(w Entry) bool { return w.ID == e.ID }) {
			t.Errorf("after Delete: unexpected %+v", e)
		}
	}
}

func TestDumpFilters(t *testing.T) {
	ns := newNetns(t).record(t, "dump-filters", "the entries of testEntries (kernel_test.go, IPv4 and IPv6), made with Create; then dumps with filters, in the kernel (CTA_FILTER, zone, family) and here")
	dumpFilters(t, ns)
}

// dumpFilters creates testEntries in ns and dumps them with filters,
// comparing with testEntries and with conntrack -L.
func dumpFilters(t *testing.T, ns testNS) {
	all := testEntries()
	ns.create(t, all...)
	text, hasText := ns.tool(t, "conntrack-L-id", "conntrack -L -o extended,id")
	var printed []Entry
	if hasText {
		var err error
		if printed, _, err = ParseText("conntrack -L", strings.NewReader(text), 0); err != nil || len(printed) != len(all) {
			t.Fatalf("conntrack -L: %d entries, %v; want %d\n%s", len(printed), err, len(all), text)
		}
	}
	zone0, zone5 := uint16(0), uint16(5)
	vip, vip6 := ip("10.96.0.10"), ip("fd00:96::10")
	cases := []struct {
		name   string
		f      Filter
		want   func(e Entry) bool
		kernel bool // the kernel alone returns exactly the matches
	}{
		{"orig dst", Filter{OrigDst: []netip.Addr{vip}},
			func(e Entry) bool { return e.Orig.Dst == vip }, true},
		{"udp orig dst port", Filter{Protocol: "udp", OrigDst: []netip.Addr{vip}, OrigDstPorts: []uint16{53}},
			func(e Entry) bool { return e.Protocol == "udp" && e.Orig.Dst == vip && e.Orig.DstPort == 53 }, true},
		{"stale udp (kube-proxy)", Filter{Protocol: "udp", OrigDst: []netip.Addr{vip}, ReplySrc: []netip.Addr{ip("10.244.1.6")}},
			func(e Entry) bool { return e.Protocol == "udp" && e.Orig.Dst == vip && e.Reply.Src == ip("10.244.1.6") }, true},
		{"reply src = VIP", Filter{ReplySrc: []netip.Addr{vip}},
			func(e Entry) bool { return e.Reply.Src == vip }, true},
		{"protocol number", Filter{Family: "ipv4", Protocol: "17"},
			func(e Entry) bool { return e.Protocol == "udp" && e.Family == IPv4 }, true},
		{"zone 5", Filter{Zone: &zone5}, func(e Entry) bool { return e.Zone == 5 }, true},
		{"zone 0", Filter{Zone: &zone0}, func(e Entry) bool { return e.Zone == 0 }, false},
		{"IPv6 orig dst", Filter{OrigDst: []netip.Addr{vip6}},
			func(e Entry) bool { return e.Orig.Dst == vip6 }, false},
		{"IPv6 reply src", Filter{ReplySrc: []netip.Addr{ip("fd00:244::6")}},
			func(e Entry) bool { return e.Reply.Src == ip("fd00:244::6") }, false},
		{"dual-stack list", Filter{OrigDst: []netip.Addr{vip, vip6}, OrigDstPorts: []uint16{53, 80}},
			func(e Entry) bool {
				return (e.Orig.Dst == vip || e.Orig.Dst == vip6) && slices.Contains([]uint16{53, 80}, e.Orig.DstPort)
			}, false},
		{"sctp port (user space)", Filter{Family: "IPv4", Protocol: "sctp", OrigDstPorts: []uint16{9999}},
			func(e Entry) bool { return e.Protocol == "sctp" }, true},
		{"family only", Filter{Family: "IPv6"}, func(e Entry) bool { return e.Family == IPv6 }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []key
			for _, e := range all {
				if e := expected(e); c.want(e) {
					want = append(want, keyOf(e))
				}
			}
			if len(want) == 0 {
				t.Fatal("bad test: nothing matches")
			}
			got, st := ns.dumpAll(t, c.f)
			if !sameKeys(got, want) || st.Passed != len(want) {
				t.Errorf("Dump: %d entries (%v), want %d", len(got), st, len(want))
			}
			if hasText {
				sameAsPrinted(t, got, slices.DeleteFunc(slices.Clone(printed), func(e Entry) bool { return !c.want(e) }))
			}
			kernel := kernelOnly(t, ns, c.f)
			for _, w := range want {
				if !slices.ContainsFunc(kernel, func(e Entry) bool { return keyOf(e) == w }) {
					t.Errorf("the kernel filter dropped a matching entry %+v", w)
				}
			}
			if c.kernel && (len(kernel) != len(want) || st.Seen != len(want) || !st.KernelFilter) {
				t.Errorf("kernel returned %d entries (stats %+v), want %d: filter not applied in the kernel", len(kernel), st, len(want))
			}
		})
	}
	nop := func(Entry) error { return nil }
	if _, err := ns.tab.dump(context.Background(), Filter{Protocol: "bogus"}, nop); err == nil {
		t.Error("unknown protocol accepted")
	}
	if _, err := ns.tab.dump(context.Background(), Filter{Family: "ipx"}, nop); err == nil {
		t.Error("unknown family accepted")
	}
}

func sameKeys(got []Entry, want []key) bool {
	if len(got) != len(want) {
		return false
	}
	for _, e := range got {
		if !slices.Contains(want, keyOf(e)) {
			return false
		}
	}
	return true
}

// kernelOnly dumps with f's kernel filter and no filtering here.
func kernelOnly(t *testing.T, ns testNS, f Filter) []Entry {
	t.Helper()
	m, err := compileFilter(f)
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := m.kernelFilter()
	if err != nil {
		t.Fatal(err)
	}
	return rawDump(t, ns, m.nfFamily, attrs)
}

// rawDump dumps with exactly these filter attributes in the kernel and no
// filtering here.
func rawDump(t *testing.T, ns testNS, nfFamily uint8, attrs []byte) []Entry {
	t.Helper()
	var got []Entry
	ns.do(t, func() error {
		c, err := ns.tab.conn()
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = dumpConn(context.Background(), c, &matcher{nfFamily: nfFamily}, attrs, func(e Entry) error {
			got = append(got, e)
			return nil
		})
		return err
	})
	return got
}

func TestDumpStops(t *testing.T) {
	ns := newNetns(t)
	ns.create(t, testEntries()...)
	stop := errors.New("enough")
	ns.do(t, func() error {
		st, err := Dump(context.Background(), Filter{}, func(Entry) error { return stop })
		if !errors.Is(err, stop) || st.Passed != 1 {
			return fmt.Errorf("fn error: %v, %+v; want %v after 1 entry", err, st, stop)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Dump(ctx, Filter{}, func(Entry) error { return nil }); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("canceled context: %v", err)
		}
		if _, err := Count(ctx); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Count, canceled context: %v", err)
		}
		return nil
	})
}
