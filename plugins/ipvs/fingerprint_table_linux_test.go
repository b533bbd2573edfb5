//go:build linux

package ipvs

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// hasIPVS says whether the kernel has IPVS, as the reader finds it in ns.
func hasIPVS(t testing.TB, ns string) bool {
	t.Helper()
	var has bool
	if err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		c, err := ipvsnetlink.OpenIPVS(ipvsnetlink.Kernel{})
		if c != nil {
			has = true
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return has
}

// inNetns runs fn in ns, failing the test on its error.
func inNetns(t testing.TB, ns string, fn func() error) {
	t.Helper()
	if err := netns.Run(filepath.Join("/run/netns", ns), fn); err != nil {
		t.Fatal(err)
	}
}

// fpSets are kube-proxy-like ipsets and their members.
var fpSets = []struct {
	set     *IPSet
	members []string
}{
	{&IPSet{Name: "KUBE-CLUSTER-IP", Type: "hash:ip,port", Family: "inet"}, []string{"10.96.0.10,tcp:80", "10.96.0.11,tcp:80", "10.96.0.12,udp:53"}},
	{&IPSet{Name: "KUBE-LOOP-BACK", Type: "hash:ip,port,ip", Family: "inet"}, []string{"10.244.1.5,tcp:8080,10.244.1.5"}},
	{&IPSet{Name: "KUBE-NODE-PORT-TCP", Type: "bitmap:port"}, []string{"30080"}},
	{&IPSet{Name: "KUBE-LOAD-BALANCER-SOURCE-CIDR", Type: "hash:ip,port,net", Family: "inet"}, []string{"198.51.100.5,tcp:80,203.0.113.0/24"}},
}

// withNetfilter runs fn on a netfilter netlink connection in ns.
func withNetfilter(t testing.TB, ns string, fn func(c *ipvsnetlink.Conn) error) {
	t.Helper()
	inNetns(t, ns, func() error {
		c, err := ipvsnetlink.Open(ipvsnetlink.Kernel{}, ipvsnetlink.ProtoNetfilter)
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(c)
	})
}

// makeSets makes fpSets in ns with the repair's writes.
func makeSets(t testing.TB, ns string) {
	t.Helper()
	withNetfilter(t, ns, func(c *ipvsnetlink.Conn) error {
		for _, s := range fpSets {
			if err := createSet(c, s.set); err != nil {
				return err
			}
			for _, m := range s.members {
				if err := setMember(c, s.set, m, true); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// changeMember adds or removes a member of KUBE-CLUSTER-IP in ns.
func changeMember(t testing.TB, ns, member string, add bool) {
	t.Helper()
	withNetfilter(t, ns, func(c *ipvsnetlink.Conn) error { return setMember(c, fpSets[0].set, member, add) })
}

// TestKernelFingerprintTable: in a namespace of a kernel with IPVS (the VM
// lab's: vm-test.sh), with a few virtual servers, real servers,
// kube-proxy-like ipsets and kube-ipvs0's addresses, the digest is the
// same while nothing changes, also after traffic moved the counters, and
// differs after a real server's weight changes, a real server is
// replaced by another, a virtual server's scheduler changes, or an ipset
// member is added or removed; the state put back, the digest is the
// first again. Where the kernel has no IPVS (the host's), the digest
// says so, and the ipsets' part is checked alone.
func TestKernelFingerprintTable(t *testing.T) {
	ns := netnstest.New(t, "ipvsfpt")
	makeSets(t, ns)
	if !hasIPVS(t, ns) {
		if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
			t.Fatal("the kernel has IPVS, the reader found none")
		}
		checkSetsDigest(t, ns)
		t.Log("this kernel has no IPVS: checked the ipsets' digest; the IPVS table's runs in the VM lab (test/e2e TestIPVSVM, or plugins/ipvs/vm-test.sh)")
		return
	}
	netnstest.Run(t, ns, "", "sh", "-c", strings.Join([]string{
		"ip link set lo up", "ip link add kube-ipvs0 type dummy",
		"ip addr add 10.96.0.10/32 dev kube-ipvs0", "ip addr add 10.96.0.11/32 dev kube-ipvs0",
		"ip addr add 10.96.0.12/32 dev kube-ipvs0", "ip link set kube-ipvs0 up",
		"ip route add 10.244.0.0/16 dev lo",
		"ipvsadm -A -t 10.96.0.10:80 -s rr",
		"ipvsadm -a -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1", "ipvsadm -a -t 10.96.0.10:80 -r 10.244.2.7:8080 -m -w 1",
		"ipvsadm -A -t 10.96.0.11:80 -s rr -p 10800",
		"ipvsadm -a -t 10.96.0.11:80 -r 10.244.2.8:8080 -m -w 1",
		"ipvsadm -A -u 10.96.0.12:53 -s rr",
		"ipvsadm -a -u 10.96.0.12:53 -r 10.244.1.9:53 -m -w 1", "ipvsadm -a -u 10.96.0.12:53 -r 10.244.2.9:53 -m -w 1",
	}, " && "))
	digest := func() []byte {
		t.Helper()
		var d []byte
		inNetns(t, ns, func() (err error) {
			d, err = Loader{}.KernelFingerprint(context.Background())
			return err
		})
		return d
	}
	first := digest()
	if s := string(first); s == "IPVS: empty" || s == "IPVS: not loaded" || !strings.HasPrefix(s, "IPVS: ") {
		t.Fatalf("the digest of a table in use: %q", first)
	}
	if !bytes.Equal(digest(), first) {
		t.Fatal("the digest changed while nothing did")
	}
	traffic(t, ns)
	if !bytes.Equal(digest(), first) {
		t.Error("the digest changed with the counters")
	}
	for _, c := range []struct{ name, change, back string }{
		{"weight", "ipvsadm -e -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 3", "ipvsadm -e -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1"},
		{"real server replaced",
			"ipvsadm -d -t 10.96.0.10:80 -r 10.244.2.7:8080 && ipvsadm -a -t 10.96.0.10:80 -r 10.244.2.6:8080 -m -w 1",
			"ipvsadm -d -t 10.96.0.10:80 -r 10.244.2.6:8080 && ipvsadm -a -t 10.96.0.10:80 -r 10.244.2.7:8080 -m -w 1"},
		{"scheduler", "ipvsadm -E -t 10.96.0.11:80 -s wrr -p 10800", "ipvsadm -E -t 10.96.0.11:80 -s rr -p 10800"},
		{"kube-ipvs0 address", "ip addr del 10.96.0.11/32 dev kube-ipvs0", "ip addr add 10.96.0.11/32 dev kube-ipvs0"},
	} {
		netnstest.Run(t, ns, "", "sh", "-c", c.change)
		if bytes.Equal(digest(), first) {
			t.Errorf("%s: the digest did not change", c.name)
		}
		netnstest.Run(t, ns, "", "sh", "-c", c.back)
		if !bytes.Equal(digest(), first) {
			t.Errorf("%s: put back, the digest is not the first\n%s", c.name, netnstest.Run(t, ns, "", "ipvsadm", "-Ln"))
		}
	}
	checkMemberChanges(t, ns, "digest", digest, first)
}

// checkMemberChanges checks that get, whose answer in ns was first,
// changes when a member of KUBE-CLUSTER-IP is added, is first again once it
// is removed, and changes when one of the first members is removed.
func checkMemberChanges(t *testing.T, ns, what string, get func() []byte, first []byte) {
	t.Helper()
	changeMember(t, ns, "10.96.0.13,tcp:80", true)
	if bytes.Equal(get(), first) {
		t.Errorf("an ipset member added: the %s did not change", what)
	}
	changeMember(t, ns, "10.96.0.13,tcp:80", false)
	if !bytes.Equal(get(), first) {
		t.Errorf("an ipset member removed again: the %s is not the first", what)
	}
	changeMember(t, ns, "10.96.0.12,udp:53", false)
	if bytes.Equal(get(), first) {
		t.Errorf("an ipset member removed: the %s did not change", what)
	}
}

// traffic opens connections to the virtual servers in ns (the real
// servers answer nothing) and sends a datagram, which moves IPVS's
// connection counts at once and its statistics when its estimator next
// sums them (every 2 s), and checks that both moved.
func traffic(t *testing.T, ns string) {
	t.Helper()
	before, stats := netnstest.Run(t, ns, "", "ipvsadm", "-Ln"), netnstest.Run(t, ns, "", "ipvsadm", "-Ln", "--stats")
	inNetns(t, ns, func() error {
		for _, a := range []string{"10.96.0.10:80", "10.96.0.11:80"} {
			if c, err := net.DialTimeout("tcp", a, 100*time.Millisecond); err == nil {
				c.Close()
			}
		}
		c, err := net.Dial("udp", "10.96.0.12:53")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("query"))
		return err
	})
	if after := netnstest.Run(t, ns, "", "ipvsadm", "-Ln"); after == before {
		t.Fatalf("connections to the virtual servers moved no connection count:\n%s", after)
	}
	for deadline := time.Now().Add(10 * time.Second); netnstest.Run(t, ns, "", "ipvsadm", "-Ln", "--stats") == stats; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connections to the virtual servers moved no statistic in 10 s:\n%s", stats)
		}
	}
}

// checkSetsDigest checks the ipsets' part of the digest in ns, where
// makeSets made fpSets: the same twice, changed by a member added, the
// first again once it is removed.
func checkSetsDigest(t *testing.T, ns string) {
	t.Helper()
	records := func() []byte {
		t.Helper()
		var recs [][]byte
		inNetns(t, ns, func() (err error) {
			recs, err = ipsetRecords(ipvsnetlink.Kernel{})
			return err
		})
		if len(recs) != len(fpSets) {
			t.Fatalf("%d ipsets read, %d made", len(recs), len(fpSets))
		}
		return sortedRecords(nil, recs)
	}
	first := records()
	if !bytes.Equal(records(), first) {
		t.Fatal("the ipsets' records changed while nothing did")
	}
	checkMemberChanges(t, ns, "ipsets' records", records, first)
}
