package ipvsnetlink_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// recordings are plugins/ipvs's, made from real kernels.
func recording(t *testing.T, name string) *ipvsnetlinktest.Player {
	t.Helper()
	p, err := ipvsnetlinktest.Load(filepath.Join("..", "testdata", "kernel", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSplit(t *testing.T) {
	msg := func(n int) []byte {
		b := make([]byte, n)
		b[0] = byte(n)
		return b
	}
	two := append(msg(20), msg(16)...)
	ms, err := ipvsnetlink.Split(two)
	if err != nil || len(ms) != 2 || len(ms[0].Data) != 4 || len(ms[1].Data) != 0 {
		t.Fatalf("%v: %+v", err, ms)
	}
	for _, bad := range [][]byte{two[:30], msg(10), append(msg(16), 1, 2)} {
		if _, err := ipvsnetlink.Split(bad); !errors.Is(err, ipvsnetlink.ErrTruncated) {
			t.Errorf("%x: error %v", bad, err)
		}
	}
}

func TestAddrs(t *testing.T) {
	p := recording(t, "kube-ipvs0-render.rec")
	l, err := ipvsnetlink.Addrs(p, "kube-ipvs0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 2 || len(l.Addrs) != 5 {
		t.Errorf("index %d, %d addresses; want 2 and 5", l.Index, len(l.Addrs))
	}
	if err := p.Done(); err != nil {
		t.Error(err)
	}
	if _, err := ipvsnetlink.Addrs(recording(t, "kube-ipvs0-absent.rec"), "kube-ipvs0"); !errors.Is(err, ipvsnetlink.ErrNoLink) {
		t.Errorf("no interface: error %v", err)
	}
}

func TestIPVS(t *testing.T) {
	if c, err := ipvsnetlink.OpenIPVS(recording(t, "ipvs-absent.rec")); c != nil || err != nil {
		t.Fatalf("no IPVS: %v, %v", c, err)
	}
	p := recording(t, "ipvs-render.rec")
	c, err := ipvsnetlink.OpenIPVS(p)
	if err != nil || c == nil {
		t.Fatalf("%v, %v", c, err)
	}
	defer c.Close()
	svcs, err := c.Services()
	if err != nil || len(svcs) != 5 {
		t.Fatalf("%d services: %v", len(svcs), err)
	}
	// The reader asks for each one's real servers: only the first here.
	if _, err := c.Dests(nil); err == nil {
		t.Error("a request not recorded was answered")
	}
	if err := p.Done(); err == nil {
		t.Error("Done with requests left")
	}
}
