//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// ipvsServices are Services whose endpoints are given by hand: kube-proxy
// programs IPVS from the objects alone, no Pod is needed for that.
const ipvsServices = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.50.10
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.10], conditions: {ready: true}}
- {addresses: [10.244.1.11], conditions: {ready: true}}
- {addresses: [10.244.2.12], conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: sticky, namespace: default}
spec:
  clusterIP: 10.96.50.11
  sessionAffinity: ClientIP
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: sticky-1, namespace: default, labels: {kubernetes.io/service-name: sticky}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.20], conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: np, namespace: default}
spec:
  type: NodePort
  clusterIP: 10.96.50.12
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: np-1, namespace: default, labels: {kubernetes.io/service-name: np}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.30], conditions: {ready: true}}
- {addresses: [10.244.2.31], conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: default}
spec:
  clusterIP: 10.96.50.13
  ports: [{name: http, port: 80, targetPort: 8080}]
---
# externalTrafficPolicy Local with an endpoint on the VM node and one
# elsewhere: external traffic goes to the local one, unmasqueraded.
apiVersion: v1
kind: Service
metadata: {name: local-np, namespace: default}
spec:
  type: NodePort
  clusterIP: 10.96.50.14
  externalTrafficPolicy: Local
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30081}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: local-np-1, namespace: default, labels: {kubernetes.io/service-name: local-np}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.200.5], nodeName: vm1, conditions: {ready: true}}
- {addresses: [10.244.1.40], nodeName: node1, conditions: {ready: true}}
---
# externalTrafficPolicy Local with no endpoint on the VM node: ipvs mode
# falls back to the cluster's endpoints.
apiVersion: v1
kind: Service
metadata: {name: local-none, namespace: default}
spec:
  type: NodePort
  clusterIP: 10.96.50.15
  externalTrafficPolicy: Local
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30083}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: local-none-1, namespace: default, labels: {kubernetes.io/service-name: local-none}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.41], nodeName: node1, conditions: {ready: true}}
---
# internalTrafficPolicy Local with no endpoint on the VM node: a virtual
# server without real servers.
apiVersion: v1
kind: Service
metadata: {name: itp-local, namespace: default}
spec:
  clusterIP: 10.96.50.16
  internalTrafficPolicy: Local
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: itp-local-1, namespace: default, labels: {kubernetes.io/service-name: itp-local}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.42], nodeName: node1, conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: default}
spec:
  clusterIP: 10.96.50.17
  externalIPs: [198.51.100.7]
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-1, namespace: default, labels: {kubernetes.io/service-name: ext}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.43], conditions: {ready: true}}
---
# A load balancer with source ranges: a client outside them is dropped.
apiVersion: v1
kind: Service
metadata: {name: lb, namespace: default}
spec:
  type: LoadBalancer
  clusterIP: 10.96.50.18
  loadBalancerSourceRanges: [203.0.113.0/24]
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30084}]
status:
  loadBalancer:
    ingress: [{ip: 198.51.100.50, ipMode: VIP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: lb-1, namespace: default, labels: {kubernetes.io/service-name: lb}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.44], conditions: {ready: true}}
- {addresses: [10.244.2.45], conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: default}
spec:
  clusterIP: 10.96.50.19
  ports: [{name: dns, port: 53, targetPort: 5353, protocol: UDP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: dns-1, namespace: default, labels: {kubernetes.io/service-name: dns}}
addressType: IPv4
ports: [{name: dns, port: 5353, protocol: UDP}]
endpoints:
- {addresses: [10.244.1.46], conditions: {ready: true}}
- {addresses: [10.244.2.47], conditions: {ready: true}}
---
# An endpoint on the node's own address (host network, as the API
# server's on a control-plane node).
apiVersion: v1
kind: Service
metadata: {name: hostnet, namespace: default}
spec:
  clusterIP: 10.96.50.20
  ports: [{name: http, port: 90, targetPort: 9090}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: hostnet-1, namespace: default, labels: {kubernetes.io/service-name: hostnet}}
addressType: IPv4
ports: [{name: http, port: 9090, protocol: TCP}]
endpoints:
- {addresses: [10.0.2.15], nodeName: vm1, conditions: {ready: true}}
---
# Real backends: pod namespaces in the VM (vmPods) answer on these.
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  type: NodePort
  clusterIP: 10.96.50.30
  externalTrafficPolicy: Local
  ports:
  - {name: tcp, port: 80, targetPort: 8080, nodePort: 30090, protocol: TCP}
  - {name: udp, port: 53, targetPort: 5353, nodePort: 30091, protocol: UDP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, namespace: default, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: tcp, port: 8080, protocol: TCP}, {name: udp, port: 5353, protocol: UDP}]
endpoints:
- {addresses: [10.244.200.11], nodeName: vm1, conditions: {ready: true}}
- {addresses: [10.244.200.12], nodeName: vm1, conditions: {ready: true}}
- {addresses: [10.244.200.13], nodeName: vm1, conditions: {ready: true}}
- {addresses: [10.244.200.14], nodeName: vm1, conditions: {ready: false}}
`

// vmPods are the pod namespaces the traffic test makes in the VM, on a
// bridge as a simple CNI would: backends answering with their name, and a
// client.
var vmPods = map[string]string{"10.244.200.11": "p11", "10.244.200.12": "p12", "10.244.200.13": "p13", "10.244.200.14": "p14", "10.244.200.20": "c20"}

// TestIPVSVM runs kube-proxy in ipvs mode on a VM node (the host's kernel
// has no IPVS) against the lab's API server, and reads what it programs:
// a virtual server per Service address with its endpoints as real
// servers, persistence for ClientIP affinity, none for a Service without
// endpoints; svctrace imports the table with the objects and explains
// each Service from it, and sees a real server deleted by hand.
func TestIPVSVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	l, vm := startIPVSVMWith(ctx, t, "", map[string][]byte{"usr/local/bin/ipvs.test": ipvsPlaneTests(ctx, t)})
	bin := buildSvctrace(t)
	t.Logf("VM node %s runs with %s %v", vm.Name, vm.Accel, vm.Failed)
	// The ipvs plane's digest, which an idle agent confirms its last check
	// by, needs a kernel with IPVS: its test runs in the VM.
	fp, err := vm.Run(ctx, "cd /tmp && CI=true /usr/local/bin/ipvs.test -test.run '^TestKernelFingerprintTable$' -test.v 2>&1; echo exit=$?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fp, "--- PASS: TestKernelFingerprintTable") || !strings.Contains(fp, "exit=0") || strings.Contains(fp, "has no IPVS") {
		t.Errorf("the ipvs plane's digest test in the VM:\n%s", fp)
	} else {
		t.Logf("the ipvs plane's digest test in the VM: %s", fp[strings.Index(fp, "--- PASS"):])
	}
	// Its benchmark too, once, as the host's benchmarks run: it must keep
	// running (vm-test.sh measures).
	bench, err := vm.Run(ctx, "cd /tmp && /usr/local/bin/ipvs.test -test.run '^$' -test.bench '^BenchmarkIPVSDigest10k$' -test.benchtime 1x 2>&1; echo exit=$?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bench, "x-read") || !strings.Contains(bench, "exit=0") {
		t.Errorf("the ipvs plane's digest benchmark in the VM:\n%s", bench)
	} else {
		t.Logf("the ipvs plane's digest benchmark in the VM: %s", bench[strings.Index(bench, "BenchmarkIPVSDigest10k"):])
	}
	if err := vm.StartKubeProxy(ctx, "ipvs"); err != nil {
		t.Fatal(err)
	}
	table, err := vm.Run(ctx, "ipvsadm -Sn")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-A -t 10.96.50.10:80 -s rr",
		"-a -t 10.96.50.10:80 -r 10.244.1.10:8080 -m -w 1",
		"-a -t 10.96.50.10:80 -r 10.244.2.12:8080 -m -w 1",
		"-A -t 10.96.50.11:80 -s rr -p 10800",
		"-A -t 10.0.2.15:30080 -s rr",
		"-a -t 10.0.2.15:30080 -r 10.244.2.31:8080 -m -w 1",
		"-A -t 10.96.50.13:80 -s rr",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("kube-proxy's IPVS table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "-a -t 10.96.50.13:80") {
		t.Errorf("a Service without endpoints has real servers:\n%s", table)
	}

	dir := t.TempDir()
	objects := filepath.Join(dir, "objects.yaml")
	out, err := l.Kubectl(ctx, "get", "nodes,services,endpointslices", "-A", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objects, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	explain := func(table, svc string) string {
		t.Helper()
		f := filepath.Join(dir, "ipvs.txt")
		if err := os.WriteFile(f, []byte(table+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		snap := filepath.Join(dir, "vm1.yaml")
		if out, err := exec.CommandContext(ctx, bin, "collect", "--node", "vm1", "--objects", objects, "--ipvsadm", f, "--proxy-mode", "ipvs", "-f", snap).CombinedOutput(); err != nil {
			t.Fatalf("collect: %v\n%s", err, out)
		}
		out, err := exec.CommandContext(ctx, bin, "explain", svc, "--snapshot", snap).CombinedOutput()
		if err != nil {
			t.Fatalf("explain %s: %v\n%s", svc, err, out)
		}
		return string(out)
	}
	got := explain(table, "default/web")
	for _, want := range []string{"Service default/web on node vm1 (ipvs mode)", "ClusterIP 10.96.50.10:80/TCP  default/web:http",
		"1/3   10.244.1.10:8080", "1/3   10.244.1.11:8080", "1/3   10.244.2.12:8080", "drift in ipvs mode is not checked"} {
		if !strings.Contains(got, want) {
			t.Errorf("explain default/web lacks %q:\n%s", want, got)
		}
	}
	if got := explain(table, "default/sticky"); !strings.Contains(got, "session affinity ClientIP, 10800s") {
		t.Errorf("explain default/sticky:\n%s", got)
	}
	if got := explain(table, "default/empty"); !strings.Contains(got, "REJECT: the virtual server has no real server") {
		t.Errorf("explain default/empty:\n%s", got)
	}

	// svctrace on the node reads the table over netlink, as ipvsadm
	// lists it, and explains from what it collected.
	listed, err := vm.Run(ctx, "ipvsadm -Ln")
	if err != nil {
		t.Fatal(err)
	}
	collected, err := vm.Run(ctx, "kubectl-svctrace collect --local --node vm1 --kubeconfig "+lab.VMAdminKubeconfig+" -f /tmp/vm1.yaml >/dev/null 2>&1; kubectl-svctrace explain default/np --snapshot /tmp/vm1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Service default/np on node vm1 (ipvs mode)", "NodePort 10.0.2.15:30080/TCP  default/np:http", "ipvs TCP 10.0.2.15:30080 rr", "1/2   10.244.1.30:8080", "1/2   10.244.2.31:8080"} {
		if !strings.Contains(collected, want) {
			t.Errorf("explain in the VM lacks %q:\n%s", want, collected)
		}
	}
	dumped, err := vm.Run(ctx, `awk '/collector: ipvsadm/{f=1} f&&/^ *text: \|/{p=1;next} p&&/^  - collector:|^  [a-z]/{exit} p' /tmp/vm1.yaml | sed 's/^      //'`)
	if err != nil {
		t.Fatal(err)
	}
	if norm(dumped) != norm(listed) {
		t.Errorf("the table read over netlink is not what ipvsadm lists:\n--- netlink\n%s\n--- ipvsadm -Ln\n%s", dumped, listed)
	}

	// The node as kube-proxy left it has no drift, read live or from the
	// snapshot collected there.
	for _, cmd := range []string{
		"kubectl-svctrace drift --local --node vm1 --kubeconfig " + lab.VMAdminKubeconfig,
		"kubectl-svctrace drift --snapshot /tmp/vm1.yaml",
	} {
		out, err := vm.Run(ctx, cmd+" 2>&1; echo exit=$?")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "exit=0") {
			t.Errorf("%s on the healthy node:\n%s", cmd, out)
		}
	}
	vmTraffic(ctx, t, vm)

	healthy, err := vm.Run(ctx, "cat /tmp/vm1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("SVCTRACE_IPVS_SNAPSHOT_OUT"); dst != "" {
		if err := os.WriteFile(dst, []byte(healthy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	drift := func(name, snapshot string) (string, int) {
		t.Helper()
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, []byte(snapshot), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, bin, "drift", "--snapshot", f, "-o", "json").CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := drift("healthy", healthy); code != 0 {
		t.Errorf("drift on the healthy snapshot exits %d:\n%s", code, out)
	}
	// One real server deleted from the dump: one MissingEndpoint for that
	// Service, naming it.
	var kept []string
	for _, line := range strings.Split(healthy, "\n") {
		if !strings.Contains(line, "-> 10.244.1.11:8080") {
			kept = append(kept, line)
		}
	}
	out, code := drift("one-real-server-less", strings.Join(kept, "\n"))
	wantFindings(t, "a real server deleted from the dump", out, code, "MissingEndpoint", "default/web:http", "10.244.1.11:8080")

	// With kube-proxy stopped, a real server deleted by hand stays gone,
	// and svctrace sees two backends left.
	if err := vm.StopKubeProxy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.Run(ctx, "ipvsadm -d -t 10.96.50.10:80 -r 10.244.1.11:8080"); err != nil {
		t.Fatal(err)
	}
	if table, err = vm.Run(ctx, "ipvsadm -Ln"); err != nil {
		t.Fatal(err)
	}
	got = explain(table, "default/web")
	if !strings.Contains(got, "1/2   10.244.1.10:8080") || !strings.Contains(got, "1/2   10.244.2.12:8080") || strings.Contains(got, "10.244.1.11:8080") {
		t.Errorf("after the real server was deleted:\n%s", got)
	}
	// The Service's address removed from kube-ipvs0: one
	// MissingVIPAddress, and nothing else.
	if _, err := vm.Run(ctx, "ipvsadm -a -t 10.96.50.10:80 -r 10.244.1.11:8080 -m -w 1 && ip addr del 10.96.50.11/32 dev kube-ipvs0"); err != nil {
		t.Fatal(err)
	}
	collect := func() string {
		t.Helper()
		snap, err := vm.Run(ctx, "kubectl-svctrace collect --local --node vm1 --kubeconfig "+lab.VMAdminKubeconfig+" -f /tmp/now.yaml >/dev/null 2>&1; cat /tmp/now.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	out, code = drift("no-vip", collect())
	wantFindings(t, "a virtual address removed from kube-ipvs0", out, code, "MissingVIPAddress", "default/sticky:http", "10.96.50.11")

	// Each change below, made with kube-proxy stopped, gives exactly its
	// finding, and is undone before the next.
	for _, c := range []struct {
		what, change, undo string
		api                bool
		typ, spn, about    string
	}{
		{what: "an ipset member deleted", change: "ip addr add 10.96.50.11/32 dev kube-ipvs0 && ipset del KUBE-CLUSTER-IP 10.96.50.17,tcp:80",
			undo: "ipset add KUBE-CLUSTER-IP 10.96.50.17,tcp:80", typ: "MissingSetMember", spn: "default/ext:http", about: "10.96.50.17,tcp:80"},
		{what: "a ready endpoint's real server at weight 0", change: "ipvsadm -e -t 10.96.50.10:80 -r 10.244.1.11:8080 -m -w 0",
			undo: "ipvsadm -e -t 10.96.50.10:80 -r 10.244.1.11:8080 -m -w 1", typ: "Weight0ReadyEndpoint", spn: "default/web:http", about: "10.244.1.11:8080"},
		{what: "a virtual server's scheduler changed", change: "ipvsadm -E -t 10.96.50.12:80 -s wrr",
			undo: "ipvsadm -E -t 10.96.50.12:80 -s rr", typ: "SchedulerMismatch", spn: "default/np:http", about: "10.96.50.12:80"},
		{what: "persistence set on a virtual server", change: "ipvsadm -E -t 10.96.50.10:80 -s rr -p 60",
			undo: "ipvsadm -E -t 10.96.50.10:80 -s rr", typ: "AffinityMismatch", spn: "default/web:http", about: "10.96.50.10:80"},
		{what: "a stale ipset member", change: "ipset add KUBE-NODE-PORT-TCP 31999",
			undo: "ipset del KUBE-NODE-PORT-TCP 31999", typ: "StaleSetMember", about: "31999"},
		{what: "an address left on kube-ipvs0", change: "ip addr add 10.96.50.99/32 dev kube-ipvs0",
			undo: "ip addr del 10.96.50.99/32 dev kube-ipvs0", typ: "ExtraVIPAddress", about: "10.96.50.99"},
		{what: "a Service deleted through the API", api: true, change: "delete service sticky", undo: "apply",
			typ: "StaleFrontend", about: "10.96.50.11:80"},
		{what: "a Service added through the API", api: true,
			change: "create service clusterip added --tcp=80:8080 --clusterip=10.96.50.21",
			typ:    "MissingFrontend", spn: "default/added:80-8080", about: "10.96.50.21:80"},
	} {
		var err error
		if c.api {
			_, err = l.Kubectl(ctx, strings.Fields(c.change)...)
		} else {
			_, err = vm.Run(ctx, c.change)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		out, code := drift(strings.ReplaceAll(c.what, " ", "-"), collect())
		wantFindings(t, c.what, out, code, c.typ, c.spn, c.about)
		if c.api && c.undo != "" {
			l.Apply(t, ipvsServices)
		} else if c.undo != "" {
			if _, err := vm.Run(ctx, c.undo); err != nil {
				t.Fatalf("undoing %s: %v", c.what, err)
			}
		}
	}
}

// vmTraffic makes the VM's pod namespaces and sends real connections from
// the client pod to the echo Service, over TCP and UDP, to its ClusterIP
// and its NodePort (externalTrafficPolicy Local, all endpoints local):
// they land only on the backends svctrace's trace predicts, and on each
// of them; the endpoint that is not ready gets none.
func vmTraffic(ctx context.Context, t *testing.T, vm *lab.VM) {
	t.Helper()
	vmPodNet(ctx, t, vm)
	vmTrafficCheck(ctx, t, vm)
}

// vmPodNet makes the VM's pod namespaces on a bridge, with a backend
// answering in each but the client's.
func vmPodNet(ctx context.Context, t *testing.T, vm *lab.VM) {
	t.Helper()
	setup := []string{"/usr/sbin/ip link add br0 type bridge", "/usr/sbin/ip addr add 10.244.200.1/24 dev br0", "/usr/sbin/ip link set br0 up"}
	for ip, name := range vmPods {
		setup = append(setup,
			fmt.Sprintf("unshare -n sleep 100000 >/dev/null 2>&1 & echo $! >/run/%s.pid", name),
			fmt.Sprintf("p=$(cat /run/%s.pid); /usr/sbin/ip link add h%s type veth peer name eth0 netns $p", name, name),
			fmt.Sprintf("/usr/sbin/ip link set h%s master br0 up", name),
			fmt.Sprintf("nsenter -t $(cat /run/%s.pid) -n sh -c '/usr/sbin/ip addr add %s/24 dev eth0 && /usr/sbin/ip link set eth0 up && /usr/sbin/ip link set lo up && /usr/sbin/ip route add default via 10.244.200.1'", name, ip))
		if name != "c20" {
			setup = append(setup, fmt.Sprintf("nsenter -t $(cat /run/%s.pid) -n labnet serve --name %s --tcp 8080 --udp 5353 --ready-file /run/%s.ready >/tmp/%s.log 2>&1 &", name, name, name, name))
		}
	}
	for _, c := range setup {
		if out, err := vm.Run(ctx, c); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	if _, err := vm.Run(ctx, "for f in p11 p12 p13 p14; do while [ ! -e /run/$f.ready ]; do sleep 0.1; done; done"); err != nil {
		t.Fatal(err)
	}
}

// vmTrafficCheck sends the connections and holds them to trace.
func vmTrafficCheck(ctx context.Context, t *testing.T, vm *lab.VM) {
	t.Helper()
	snap := "kubectl-svctrace collect --local --node vm1 --kubeconfig " + lab.VMAdminKubeconfig + " -f /tmp/traffic.yaml >/dev/null 2>&1"
	if out, err := vm.Run(ctx, snap); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, c := range []struct{ proto, dst string }{
		{"tcp", "10.96.50.30:80"}, {"udp", "10.96.50.30:53"}, {"tcp", "10.0.2.15:30090"}, {"udp", "10.0.2.15:30091"},
	} {
		trace, err := vm.Run(ctx, fmt.Sprintf("kubectl-svctrace trace --snapshot /tmp/traffic.yaml --src 10.244.200.20 --dst %s/%s", c.dst, c.proto))
		if err != nil {
			t.Fatal(err)
		}
		predicted := map[string]bool{}
		for _, m := range regexp.MustCompile(`FORWARD -> (10\.244\.200\.\d+):\d+`).FindAllStringSubmatch(trace, -1) {
			predicted[vmPods[m[1]]] = true
		}
		got, err := vm.Run(ctx, fmt.Sprintf("nsenter -t $(cat /run/c20.pid) -n labnet dial %s %s --count 24 --timeout 3s", c.proto, c.dst))
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", c.proto, c.dst, err, got)
		}
		reached := map[string]bool{}
		for _, l := range strings.Fields(got) {
			reached[l] = true
		}
		t.Logf("%s to %s from pod c20: reached %v", c.proto, c.dst, slices.Sorted(maps.Keys(reached)))
		if len(predicted) != 3 || !maps.Equal(predicted, reached) {
			t.Errorf("%s to %s reached %v, trace predicted %v:\n%s\n%s", c.proto, c.dst, slices.Sorted(maps.Keys(reached)), slices.Sorted(maps.Keys(predicted)), got, trace)
		}
	}
}

// wantFindings checks that drift found exactly one finding, of type typ,
// for the Service port spn, saying about.
func wantFindings(t *testing.T, what, out string, code int, typ, spn, about string) {
	t.Helper()
	var rep struct {
		Findings []struct {
			Type, Service, Endpoint, Message string
			Frontends                        []string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%s: drift -o json: %v\n%s", what, err, out)
	}
	if code != 1 || len(rep.Findings) != 1 {
		t.Fatalf("%s: drift exits %d with %d findings, want 1 and one %s:\n%s", what, code, len(rep.Findings), typ, out)
	}
	f := rep.Findings[0]
	if f.Type != typ || f.Service != spn || !strings.Contains(f.Endpoint+" "+f.Message+" "+strings.Join(f.Frontends, " "), about) {
		t.Errorf("%s: finding %+v, want a %s for %s about %s", what, f, typ, spn, about)
	}
}

// norm is a listing with its columns' spacing and trailing blanks evened
// out, and its virtual servers in ipvsadm's order kept.
func norm(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}

// startIPVSVM starts the lab with one node, applies ipvsServices, and
// starts the VM node vm1 with svctrace and labnet in it.
func startIPVSVM(ctx context.Context, t *testing.T) (*lab.Lab, *lab.VM) {
	t.Helper()
	return startIPVSVMVersion(ctx, t, "")
}

// startIPVSVMVersion is startIPVSVM with the kube-proxy of a release ("": the lab's).
func startIPVSVMVersion(ctx context.Context, t *testing.T, version string) (*lab.Lab, *lab.VM) {
	t.Helper()
	return startIPVSVMWith(ctx, t, version, nil)
}

// startIPVSVMWith is startIPVSVMVersion with more files in the VM's root.
func startIPVSVMWith(ctx context.Context, t *testing.T, version string, extra map[string][]byte) (*lab.Lab, *lab.VM) {
	t.Helper()
	l := lab.Start(t, lab.Options{Nodes: 1, ProxyVersion: version})
	l.Apply(t, ipvsServices)
	// svctrace goes in the VM too, built without cgo (the VM has no libc
	// of its own but the tools').
	svctraceBin := vmBinary(ctx, t, "build", "github.com/svctrace/svctrace/cmd/kubectl-svctrace")
	labnetBin := vmBinary(ctx, t, "build", "github.com/svctrace/svctrace/test/lab/cmd/labnet")
	files := map[string][]byte{"usr/local/bin/kubectl-svctrace": svctraceBin, "usr/local/bin/labnet": labnetBin}
	maps.Copy(files, extra)
	vm, err := l.StartVM(t, "vm1", lab.VMOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	return l, vm
}

// ipvsPlaneTests is the ipvs plane's test binary for the VM, whose tests
// and benchmarks (build tag ipvsvm) need a kernel with IPVS.
func ipvsPlaneTests(ctx context.Context, t *testing.T) []byte {
	t.Helper()
	return vmBinary(ctx, t, "test", "-tags", "ipvsvm", "-c", "github.com/svctrace/svctrace/plugins/ipvs")
}

// vmBinary is what "go <args> -o FILE" builds (args end with the package),
// without cgo: the VM has no libc of its own but the tools'.
func vmBinary(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vm.bin")
	args = slices.Insert(args, len(args)-1, "-o", out)
	build := exec.CommandContext(ctx, "go", args...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
