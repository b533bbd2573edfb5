//go:build linux && ipvsvm

// The build tag ipvsvm: this benchmark needs a kernel with IPVS, which the
// host running the project's tests has not. test/e2e TestIPVSVM builds the
// package's tests with the tag into its VM node and runs it there once;
// plugins/ipvs/vm-test.sh, which builds with the tag, measures it.

package ipvs

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// BenchmarkIPVSDigest10k is the agent's digest of ipvs mode's state
// (KernelFingerprint, at each period) on a node of 10,000 Services × 10
// endpoints: 10,000 virtual servers of 10 real servers, kube-proxy's
// ipsets of as many members (KUBE-CLUSTER-IP, KUBE-LOOP-BACK,
// KUBE-IPVS-IPS, KUBE-NODE-PORT-TCP), 10,000 addresses on kube-ipvs0. The
// baseline, measured in the same run, is the read of the same state
// (x-read: the digest's time over the read's, read-ms), as collect --local
// takes it: the IPVS table over netlink printed as ipvsadm -Ln, ipset
// save, kube-ipvs0's addresses over netlink. It needs a kernel with
// IPVS: the VM lab's (vm-test.sh).
func BenchmarkIPVSDigest10k(b *testing.B) {
	const services, endpoints = 10000, 10
	ns := netnstest.New(b, "ipvsbench")
	if !hasIPVS(b, ns) {
		b.Fatal("this kernel has no IPVS: run it in the VM lab's (plugins/ipvs/vm-test.sh)")
	}
	var table, sets, addrs strings.Builder
	sets.WriteString("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n" +
		"create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536\n" +
		"create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n" +
		"create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n")
	for s := range services {
		vip := snapshottest.IP(10<<24|96<<16, s)
		fmt.Fprintf(&table, "-A -t %s:80 -s rr\n", vip)
		for e := range endpoints {
			fmt.Fprintf(&table, "-a -t %s:80 -r %s:8080 -m -w 1\n", vip, snapshottest.IP(10<<24|244<<16, s*endpoints+e))
		}
		local := snapshottest.IP(10<<24|244<<16, s*endpoints)
		fmt.Fprintf(&sets, "add KUBE-CLUSTER-IP %s,tcp:80\nadd KUBE-LOOP-BACK %s,tcp:8080,%s\nadd KUBE-IPVS-IPS %s\n", vip, local, local, vip)
		fmt.Fprintf(&addrs, "addr add %s/32 dev kube-ipvs0\n", vip)
		if s < 100 {
			fmt.Fprintf(&sets, "add KUBE-NODE-PORT-TCP %d\n", 30000+s)
		}
	}
	netnstest.Run(b, ns, "", "sh", "-c", "ip link set lo up && ip link add kube-ipvs0 type dummy")
	netnstest.Run(b, ns, table.String(), "ipvsadm", "-R")
	netnstest.Run(b, ns, sets.String(), "ipset", "restore")
	netnstest.Run(b, ns, addrs.String(), "ip", "-batch", "-")

	var read time.Duration
	const reads = 3
	for range reads {
		start := time.Now()
		inNetns(b, ns, func() error {
			t, err := readIPVS()
			if err != nil {
				return err
			}
			if n := strings.Count(t.Text, "\n  -> "); n != services*endpoints+1 {
				return fmt.Errorf("%d real servers read", n-1)
			}
			var out, stderr bytes.Buffer
			cmd := exec.Command("ipset", "save")
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("ipset save: %w: %s", err, stderr.String())
			}
			_, err = readDummy()
			return err
		})
		read += time.Since(start)
	}
	read /= reads
	var first []byte
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		inNetns(b, ns, func() error {
			d, err := Loader{}.KernelFingerprint(context.Background())
			if err != nil {
				return err
			}
			if first == nil {
				first = d
			} else if !bytes.Equal(d, first) {
				return fmt.Errorf("the state changed while nothing wrote it")
			}
			return nil
		})
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(read), "x-read")
	b.ReportMetric(float64(read)/float64(time.Millisecond), "read-ms")
}
