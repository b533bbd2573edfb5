//go:build linux

package ipvsnetlink_test

import (
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// TestKernelRoute makes an interface and binds and unbinds addresses over
// rtnetlink in a namespace of the real kernel, as the repair does, and
// reads them back as ip does; the kernel's errors come back as errnos.
// The interface is a dummy, as kube-proxy makes kube-ipvs0, where the
// kernel has them (the VM lab's), else a bridge (the host's).
func TestKernelRoute(t *testing.T) {
	ns := netnstest.New(t, "ipvsnl")
	v4, v6 := netip.MustParsePrefix("10.96.0.10/32"), netip.MustParsePrefix("fd00::a/128")
	var index int
	err := netns.Run("/run/netns/"+ns, func() error {
		c, err := ipvsnetlink.Open(ipvsnetlink.Kernel{}, ipvsnetlink.ProtoRoute)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.LinkIndex("kube-ipvs0"); !errors.Is(err, ipvsnetlink.ErrNoLink) {
			t.Errorf("no interface: %v", err)
		}
		kind := "dummy"
		err = c.AddLink("kube-ipvs0", kind)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			kind = "bridge"
			err = c.AddLink("kube-ipvs0", kind)
		}
		if err != nil {
			return err
		}
		t.Logf("kube-ipvs0 is a %s", kind)
		if err := c.AddLink("kube-ipvs0", kind); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("made twice: %v", err)
		}
		if index, err = c.LinkIndex("kube-ipvs0"); err != nil {
			return err
		}
		for _, p := range []netip.Prefix{v4, v6, netip.MustParsePrefix("10.96.0.11/32")} {
			if err := c.Addr(true, index, p); err != nil {
				return err
			}
		}
		if err := c.Addr(true, index, v4); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("bound twice: %v", err)
		}
		if err := c.Addr(false, index, netip.MustParsePrefix("10.96.0.11/32")); err != nil {
			return err
		}
		if err := c.Addr(false, index, netip.MustParsePrefix("10.96.0.11/32")); !errors.Is(err, syscall.EADDRNOTAVAIL) {
			t.Errorf("unbound twice: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := netnstest.Run(t, ns, "", "ip", "-o", "addr", "show", "dev", "kube-ipvs0")
	if !strings.Contains(out, "inet 10.96.0.10/32 scope global kube-ipvs0") || !strings.Contains(out, "inet6 fd00::a/128 scope global") ||
		strings.Contains(out, "10.96.0.11") {
		t.Errorf("ip -o addr show:\n%s", out)
	}
	var l *ipvsnetlink.Link
	if err := netns.Run("/run/netns/"+ns, func() (err error) {
		l, err = ipvsnetlink.Addrs(ipvsnetlink.Kernel{}, "kube-ipvs0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l.Index != index || len(l.Addrs) != 2 {
		t.Errorf("index %d (want %d), %d addresses", l.Index, index, len(l.Addrs))
	}
}
