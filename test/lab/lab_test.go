//go:build linux

package lab

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain: see Main.
func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestLabSmoke: a real control plane and two real kube-proxies (iptables mode), a ClusterIP
// Service with one endpoint on each node, and real traffic from a third pod through the
// kernel's DNAT, to both backends (node2's over the node-to-node bridge).
func TestLabSmoke(t *testing.T) {
	l := Start(t, Options{Nodes: 2})
	for _, n := range []string{"node1", "node2"} {
		if err := l.StartKubeProxy(n, "iptables"); err != nil {
			t.Fatal(err)
		}
	}

	web1, err := l.AddPod("node1", "web-1", "", TCP(8080))
	if err != nil {
		t.Fatal(err)
	}
	web2, err := l.AddPod("node2", "web-2", "", TCP(8080))
	if err != nil {
		t.Fatal(err)
	}
	client, err := l.AddPodSpec(PodSpec{Node: "node1", Name: "client"})
	if err != nil {
		t.Fatal(err)
	}

	l.Apply(t, `
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
`)
	l.Apply(t, fmt.Sprintf(`
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-lab
  namespace: default
  labels:
    kubernetes.io/service-name: web
    endpointslice.kubernetes.io/managed-by: lab
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses: [%q]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node1
  targetRef: {kind: Pod, namespace: default, name: web-1}
- addresses: [%q]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node2
  targetRef: {kind: Pod, namespace: default, name: web-2}
`, web1.IP, web2.IP))
	clusterIP, err := l.ClusterIP("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node1", "node2"} {
		start := time.Now()
		if err := l.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s synced in %v", n, time.Since(start).Round(time.Millisecond))
	}

	nat, err := l.Exec("node1", "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	svcChain := regexp.MustCompile(`(?m)^-A KUBE-SERVICES -d ` + regexp.QuoteMeta(clusterIP) +
		`/32 .*--comment "default/web:http cluster IP".* -j (KUBE-SVC-[A-Z0-9]+)$`)
	m := svcChain.FindStringSubmatch(nat)
	if m == nil {
		t.Fatalf("node1 nat table has no KUBE-SERVICES jump for %s:\n%s", clusterIP, nat)
	}
	for _, ip := range []string{web1.IP, web2.IP} {
		if !strings.Contains(nat, "--to-destination "+ip+":8080") {
			t.Errorf("node1 nat table has no DNAT to %s:8080", ip)
		}
	}
	t.Logf("service chain %s for %s", m[1], clusterIP)

	res, err := l.Dial(client.Name, "tcp", clusterIP+":80", 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dial %s:80 from %s: %v", clusterIP, client.Name, res)
	if len(res.Errors) > 0 {
		t.Errorf("failed attempts: %q", res.Errors)
	}
	for _, want := range []string{"web-1", "web-2"} {
		if res.Hits[want] == 0 {
			t.Errorf("backend %s never reached: %v", want, res)
		}
	}

	if _, err := exec.LookPath("conntrack"); err == nil {
		ct, err := l.Exec("node1", "conntrack", "-L", "-p", "tcp", "--orig-dst", clusterIP)
		if err != nil {
			t.Fatalf("conntrack: %v", err)
		}
		t.Logf("conntrack on node1:\n%s", ct)
		for _, ip := range []string{web1.IP, web2.IP} {
			if !strings.Contains(ct, "src="+ip+" dst="+client.IP) {
				t.Errorf("conntrack on node1 shows no DNAT %s:80 -> %s:\n%s", clusterIP, ip, ct)
			}
		}
	} else {
		t.Log("conntrack not installed; skipping the conntrack check")
	}
}

// TestLabModes: kube-proxy in iptables mode on node1 and nftables mode on node2 (as in the
// fixtures), each node's pods reaching both backends, and a UDP service.
func TestLabModes(t *testing.T) {
	l := Start(t, Options{Nodes: 2})
	if err := l.StartKubeProxy("node1", "iptables"); err != nil {
		t.Fatal(err)
	}
	if err := l.StartKubeProxy("node2", "nftables", "--nodeport-addresses=primary"); err != nil {
		t.Fatal(err)
	}
	var backends []*Pod
	for i, node := range []string{"node1", "node2"} {
		p, err := l.AddPod(node, fmt.Sprintf("shop/dns-%d", i+1), "", UDP(5353), TCP(5353))
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, p)
	}
	l.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: shop}
spec:
  ports:
  - {name: dns-udp, port: 53, targetPort: 5353, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 5353, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: dns-lab
  namespace: shop
  labels: {kubernetes.io/service-name: dns, endpointslice.kubernetes.io/managed-by: lab}
addressType: IPv4
ports:
- {name: dns-udp, port: 5353, protocol: UDP}
- {name: dns-tcp, port: 5353, protocol: TCP}
endpoints:
- {addresses: [%q], nodeName: node1, conditions: {ready: true}}
- {addresses: [%q], nodeName: node2, conditions: {ready: true}}
`, backends[0].IP, backends[1].IP))
	ip, err := l.ClusterIP("shop", "dns")
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"node1", "node2"} {
		if err := l.WaitSynced(node); err != nil {
			t.Fatal(err)
		}
		client, err := l.AddPodSpec(PodSpec{Node: node, Name: "client-" + node, NoAPIObject: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range []string{"udp", "tcp"} {
			res, err := l.Dial(client.Name, proto, ip+":53", 20)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s -> %s:53: %v", node, proto, ip, res)
			if res.Hits["dns-1"] == 0 || res.Hits["dns-2"] == 0 || len(res.Errors) > 0 {
				t.Errorf("%s %s: want both backends and no errors, got %v %q", node, proto, res, res.Errors)
			}
		}
	}
	ruleset, err := l.Exec("node2", "nft", "list", "table", "ip", "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ruleset, ip+" . udp . 53 : goto service-") {
		t.Errorf("node2 nftables ruleset has no service-ips element for %s udp 53:\n%s", ip, ruleset)
	}
	if out, _ := l.Exec("node2", "iptables-save", "-t", "nat"); strings.Contains(out, "KUBE-SVC-") {
		t.Errorf("nftables mode left KUBE-SVC chains in iptables")
	}

	// Removing the endpoints reaches the kernel once WaitSynced returns.
	if err := l.Delete("EndpointSlice", "shop", "dns-lab"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSynced("node1"); err != nil {
		t.Fatal(err)
	}
	if nat, err := l.Exec("node1", "iptables-save", "-t", "nat"); err != nil || strings.Contains(nat, backends[0].IP) {
		t.Errorf("node1 still DNATs to %s after the EndpointSlice was deleted (err %v)", backends[0].IP, err)
	}
	// A stopped kube-proxy leaves its rules behind, as on a real node.
	if err := l.StopKubeProxy("node2"); err != nil {
		t.Fatal(err)
	}
	if out, err := l.Exec("node2", "nft", "list", "table", "ip", "kube-proxy"); err != nil || !strings.Contains(out, ip) {
		t.Errorf("node2 rules gone after StopKubeProxy (err %v)", err)
	}
}

// TestLabProxyVersions runs every kube-proxy version of SVCTRACE_LAB_PROXY_VERSION (nftables
// mode, one node each) against one control plane; with fewer than two listed, the control
// plane's version and v1.33.13 (the first release with nftables mode GA).
func TestLabProxyVersions(t *testing.T) {
	versions := ProxyVersions()
	if len(versions) < 2 {
		versions = []string{K8sVersion(), "v1.33.13"}
	}
	l := Start(t, Options{Nodes: len(versions)})
	for _, v := range versions {
		EnsureBinaries(t, v, "kube-proxy")
	}
	web, err := l.AddPod("node1", "web", "", TCP(8080))
	if err != nil {
		t.Fatal(err)
	}
	l.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-lab
  labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: lab}
addressType: IPv4
ports: [{port: 8080, protocol: TCP}]
endpoints: [{addresses: [%q], nodeName: node1, conditions: {ready: true}}]
`, web.IP))
	ip, err := l.ClusterIP("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range versions {
		node := l.Nodes()[i].Name
		if err := l.StartKubeProxyVersion(node, v, "nftables", "--nodeport-addresses=primary"); err != nil {
			t.Fatal(err)
		}
		res, err := l.Dial(node, "tcp", ip+":80", 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-proxy %s on %s: %v", v, node, res)
		if res.Hits["web"] != 5 {
			t.Errorf("kube-proxy %s on %s: %v %q", v, node, res, res.Errors)
		}
	}
}
