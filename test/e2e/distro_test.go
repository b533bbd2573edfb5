//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
)

// k3sProxyArgs are the flags k3s gives the kube-proxy it runs in its own
// process, beyond those the lab gives every kube-proxy (--kubeconfig,
// --hostname-override, --proxy-mode, --cluster-cidr, --conntrack-max-per-core=0):
// no ConfigMap, no Pod; k3s's own flags, and what --kube-proxy-arg adds.
var k3sProxyArgs = []string{"--healthz-bind-address=127.0.0.1", "--conntrack-tcp-timeout-established=0s", "--conntrack-tcp-timeout-close-wait=0s"}

// k3sChains are the chains k3s's flannel and its embedded network policy
// controller (kube-router's) write beside kube-proxy's on every agent, as
// k3s writes them, for the lab's cluster CIDR (10.244.0.0/16) and Service
// CIDR (10.96.0.0/12): flannel masquerades pod traffic leaving the cluster
// and accepts pod traffic in FORWARD; kube-router's chains let Service,
// NodePort and node traffic through, and mark what a policy admits.
const k3sChains = `*nat
:FLANNEL-POSTRTG - [0:0]
-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG
-A FLANNEL-POSTRTG -m mark --mark 0x4000/0x4000 -m comment --comment "flanneld masq" -j RETURN
-A FLANNEL-POSTRTG -s %[1]s -d 10.244.0.0/16 -m comment --comment "flanneld masq" -j RETURN
-A FLANNEL-POSTRTG -s 10.244.0.0/16 -d %[1]s -m comment --comment "flanneld masq" -j RETURN
-A FLANNEL-POSTRTG ! -s 10.244.0.0/16 -d %[1]s -m comment --comment "flanneld masq" -j RETURN
-A FLANNEL-POSTRTG -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully
-A FLANNEL-POSTRTG ! -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully
COMMIT
*filter
:FLANNEL-FWD - [0:0]
:KUBE-NWPLCY-DEFAULT - [0:0]
:KUBE-ROUTER-FORWARD - [0:0]
:KUBE-ROUTER-INPUT - [0:0]
:KUBE-ROUTER-OUTPUT - [0:0]
-A INPUT -m comment --comment "kube-router netpol - 4IA2OSFRMVNDXBVV" -j KUBE-ROUTER-INPUT
-A FORWARD -m comment --comment "kube-router netpol - TEMCG2JMHZYE7H7T" -j KUBE-ROUTER-FORWARD
-A FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD
-A OUTPUT -m comment --comment "kube-router netpol - VEAAIY32XVBHCSCY" -j KUBE-ROUTER-OUTPUT
-A FLANNEL-FWD -s 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT
-A FLANNEL-FWD -d 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT
-A KUBE-NWPLCY-DEFAULT -m comment --comment "rule to mark traffic matching a network policy" -j MARK --set-xmark 0x10000/0x10000
-A KUBE-ROUTER-INPUT -d 10.96.0.0/12 -m comment --comment "allow traffic to primary/secondary cluster IP range - EMMR4XSKDSUXPUTX" -j RETURN
-A KUBE-ROUTER-INPUT -p tcp -m comment --comment "allow LOCAL TCP traffic to node ports - LR7XO7NXDBGQJD2M" -m addrtype --dst-type LOCAL -m multiport --dports 30000:32767 -j RETURN
-A KUBE-ROUTER-INPUT -p udp -m comment --comment "allow LOCAL UDP traffic to node ports - 76UCBPIZNGJNWNUZ" -m addrtype --dst-type LOCAL -m multiport --dports 30000:32767 -j RETURN
COMMIT
`

// TestK3sStyleNode runs the matrix on nodes set up as k3s sets up its
// agents: kube-proxy in the agent's process with k3s's flags (no ConfigMap,
// no Pod), flannel's and kube-router's chains beside kube-proxy's, and a
// kubelet reporting k3s's version, which is kube-proxy's. Healthy nodes give
// no finding and a repair changes nothing, in iptables mode and then in
// nftables mode (--kube-proxy-arg=proxy-mode=nftables, started over what
// iptables mode left); with kube-proxy stopped, nothing tells its version
// but the kubelet's: svctrace reads v1.31 off it, whose nftables mode drops
// node2's own connection to a Local-policy load balancer without local
// endpoints, and a change gives exactly its finding.
func TestK3sStyleNode(t *testing.T) {
	const version = "v1.31.14"
	c := startMatrixArgs(t, "iptables", version, k3sProxyArgs)
	nodes := []string{"node1", "node2"}
	for _, n := range nodes {
		podCIDR := "10.244.1.0/24"
		if n == "node2" {
			podCIDR = "10.244.2.0/24"
		}
		if out, err := c.Exec(n, "sh", "-c", "iptables-restore --noflush <<'EOF'\n"+fmt.Sprintf(k3sChains, podCIDR)+"EOF"); err != nil {
			t.Fatalf("k3s's chains on %s: %v\n%s", n, err, out)
		}
		patch := fmt.Sprintf(`{"status":{"nodeInfo":{"kubeletVersion":%q}}}`, version+"+k3s1")
		if _, err := c.Request(context.Background(), "PATCH", "/api/v1/nodes/"+n+"/status", "application/merge-patch+json", []byte(patch)); err != nil {
			t.Fatalf("the kubelet version of %s: %v", n, err)
		}
	}
	for _, mode := range []string{"iptables", "nftables"} {
		if mode != c.mode {
			c.switchMode(t, mode)
		}
		t.Run(mode, func(t *testing.T) {
			for _, n := range nodes {
				waitDrift(t, c, n, nil)
			}
			nothingToRepair(t, c)
		})
	}
	t.Run("kube-proxy stopped: its release read off the kubelet", func(t *testing.T) {
		if err := c.StopKubeProxy("node2"); err != nil {
			t.Fatal(err)
		}
		out, code := c.svctrace(t, "node2", "drift", "--local", "--node", "node2", "-o", "json")
		var r analysis.DriftReport
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || len(r.Findings) > 0 {
			t.Fatalf("drift on node2 with kube-proxy stopped: exit %d, %v:\n%s", code, err, out)
		}
		text, _ := c.svctrace(t, "node2", "drift", "--local", "--node", "node2", "--kube-proxy-version", "v1.33.13")
		if !strings.Contains(text, "LocalPolicyMismatch") {
			t.Errorf("read as v1.33, node2's own connection to default/local-node1's load balancer is no mismatch; the test proves nothing:\n%s", text)
		}
	})
}
