package reconcile

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis/analysistest"
	"github.com/svctrace/svctrace/conntrack"
)

// fakeTable is a conntrack table in memory: the unit tests' edge of the
// kernel (the lab's TestConntrackRepair drives the real one).
type fakeTable struct {
	entries []conntrack.Entry
	// deleteErr fails every delete; vanish is deleted behind the
	// repair's back before its turn (gone, not deleted).
	deleteErr error
	vanish    string
	deleted   []string
	filters   []conntrack.Filter
}

func (f *fakeTable) Dump(_ context.Context, flt conntrack.Filter, fn func(conntrack.Entry) error) error {
	f.filters = append(f.filters, flt)
	for _, e := range f.entries {
		if len(flt.OrigDst) > 0 && !contains(flt.OrigDst, e.Orig.Dst) {
			continue
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeTable) Delete(_ context.Context, e conntrack.Entry) (bool, error) {
	if f.deleteErr != nil {
		return false, f.deleteErr
	}
	client := netip.AddrPortFrom(e.Orig.Src, e.Orig.SrcPort).String()
	if client == f.vanish {
		f.remove(client)
		return false, nil
	}
	if !f.remove(client) {
		return false, nil
	}
	f.deleted = append(f.deleted, client)
	return true, nil
}

func (f *fakeTable) remove(client string) bool {
	for i, e := range f.entries {
		if netip.AddrPortFrom(e.Orig.Src, e.Orig.SrcPort).String() == client {
			f.entries = append(f.entries[:i], f.entries[i+1:]...)
			return true
		}
	}
	return false
}

func contains(as []netip.Addr, a netip.Addr) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

func entry(proto, client, dst, reply string) conntrack.Entry {
	c, d, r := netip.MustParseAddrPort(client), netip.MustParseAddrPort(dst), netip.MustParseAddrPort(reply)
	return conntrack.Entry{Family: "IPv4", Protocol: proto, Timeout: 100,
		Orig:  conntrack.Tuple{Src: c.Addr(), Dst: d.Addr(), SrcPort: c.Port(), DstPort: d.Port()},
		Reply: conntrack.Tuple{Src: r.Addr(), Dst: c.Addr(), SrcPort: r.Port(), DstPort: c.Port()}}
}

func tableWithStale() *fakeTable {
	return &fakeTable{entries: []conntrack.Entry{
		entry("tcp", "10.244.0.9:40001", "10.96.94.233:80", "10.244.0.5:8080"),  // fine
		entry("udp", "10.244.0.9:40002", "10.96.64.120:53", "10.244.0.99:5353"), // gone backend
		entry("udp", "10.244.0.9:40004", "10.96.64.120:53", "10.96.64.120:53"),  // untranslated UDP
		entry("tcp", "10.244.0.9:40007", "192.0.2.99:80", "192.0.2.99:80"),      // not a Service
	}}
}

// TestRepairConntrackDeletesOnlyStale: exactly the stale entries are
// deleted, the table is read again for the node's frontends only, and
// nothing stale remains.
func TestRepairConntrackDeletesOnlyStale(t *testing.T) {
	a := analysistest.Node1(t, nil)
	table := tableWithStale()
	entries, err := ReadConntrack(context.Background(), table, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("read %d entries, want the 3 to Service frontends", len(entries))
	}
	r, err := RepairConntrack(context.Background(), table, a, a.CorrelateConntrack(entries))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(table.deleted, ",") != "10.244.0.9:40002,10.244.0.9:40004" || r.Deleted != 2 || r.Gone != 0 {
		t.Errorf("deleted %v (report: %d deleted, %d gone), want the two stale UDP entries", table.deleted, r.Deleted, r.Gone)
	}
	if len(r.Remaining) != 0 {
		t.Errorf("remaining %+v", r.Remaining)
	}
	if len(table.entries) != 2 {
		t.Errorf("the table keeps %d entries, want the fine one and the non-Service one", len(table.entries))
	}
	if f := table.filters[len(table.filters)-1]; f.Family != "IPv4" || len(f.OrigDst) == 0 {
		t.Errorf("read again with filter %+v, want the node's frontends", f)
	}
}

// TestRepairConntrackGoneAndErrors: an entry that vanished before its turn
// counts as gone; a failing delete stops the repair with the entry named.
func TestRepairConntrackGoneAndErrors(t *testing.T) {
	a := analysistest.Node1(t, nil)
	table := tableWithStale()
	table.vanish = "10.244.0.9:40002"
	flows := a.CorrelateConntrack(table.entries)
	r, err := RepairConntrack(context.Background(), table, a, flows)
	if err != nil {
		t.Fatal(err)
	}
	if r.Deleted != 1 || r.Gone != 1 {
		t.Errorf("%d deleted, %d gone, want 1 and 1", r.Deleted, r.Gone)
	}
	failing := tableWithStale()
	failing.deleteErr = errors.New("operation not permitted")
	_, err = RepairConntrack(context.Background(), failing, a, a.CorrelateConntrack(failing.entries))
	if err == nil || !strings.Contains(err.Error(), "operation not permitted") || !strings.Contains(err.Error(), "10.244.0.9:40002") {
		t.Errorf("error %v, want the failed delete naming its entry", err)
	}
}
