//go:build linux

package netnstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Nfacct adds extended accounting objects to the namespace over netlink
// (nfnetlink_acct), as the nfacct tool does: a rule with an nfacct match
// (kube-proxy's localhost NodePort and invalid-drop counters) needs its
// object before iptables-restore accepts it.
func Nfacct(t testing.TB, ns string, names ...string) {
	t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range names {
		ae := netlink.NewAttributeEncoder()
		ae.String(1, n) // NFACCT_NAME
		attrs, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		msg := netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(7 << 8), // NFNL_SUBSYS_ACCT, NFNL_MSG_ACCT_NEW
				Flags: netlink.Request | netlink.Create | netlink.Acknowledge},
			Data: append([]byte{unix.AF_UNSPEC, 0, 0, 0}, attrs...), // struct nfgenmsg
		}
		if _, err := c.Execute(msg); err != nil {
			t.Fatalf("adding nfacct object %s: %v", n, err)
		}
	}
}
