//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const clusterWorkloads = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: labnet
        image: svctrace.local/lab/labnet:1
        imagePullPolicy: Never
        args: [serve, --name, $(POD_NAME), --tcp, "8080"]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: everywhere, namespace: default}
spec:
  selector: {matchLabels: {app: everywhere}}
  template:
    metadata: {labels: {app: everywhere}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: labnet
        image: svctrace.local/lab/labnet:1
        imagePullPolicy: Never
        args: [serve, --name, everywhere, --tcp, "9090"]
`

// TestLabKubelets: two nodes with containerd and a kubelet register and become Ready; a
// Deployment's Pods run, pass their readiness probe and become the Service's endpoints through
// the EndpointSlice controller; a DaemonSet gets one Pod per node; kubectl logs and exec reach
// the Pods; kube-proxy sends a lab pod's connections to both; teardown leaves nothing behind.
func TestLabKubelets(t *testing.T) {
	var l *Lab
	t.Run("cluster", func(t *testing.T) {
		l = Start(t, Options{Nodes: 2, Kubelets: true})
		for _, n := range l.Nodes() {
			if ok, why := l.nodeReady(n.Name); !ok {
				t.Fatalf("%s not Ready: %s", n.Name, why)
			}
		}
		l.Apply(t, clusterWorkloads)
		eps, err := l.WaitEndpoints("default", "web", 2, 2*time.Minute)
		if err != nil {
			out, _ := l.Kubectl(context.Background(), "get", "pods", "-A", "-o", "wide")
			ev, _ := l.Kubectl(context.Background(), "get", "events", "-A")
			t.Fatalf("%v\n%s\n%s", err, out, ev)
		}
		for _, ip := range eps {
			if !strings.HasPrefix(ip, "10.244.") {
				t.Errorf("endpoint %s is not a pod address", ip)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := l.Kubectl(ctx, "rollout", "status", "daemonset/everywhere", "--timeout=90s"); err != nil {
			t.Fatalf("DaemonSet: %v", err)
		}
		nodes, err := l.Kubectl(ctx, "get", "pods", "-l", "app=everywhere", "-o", "jsonpath={.items[*].spec.nodeName}")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(strings.Fields(nodes), ","); got != "node1,node2" && got != "node2,node1" {
			t.Errorf("DaemonSet Pods on nodes %q, want one on each of node1 and node2", got)
		}

		pods, err := l.Kubectl(ctx, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			t.Fatal(err)
		}
		names := strings.Fields(pods)
		if len(names) != 2 {
			t.Fatalf("web Pods %q, want 2", pods)
		}
		logs, err := l.Kubectl(ctx, "logs", names[0])
		if err != nil || !strings.Contains(logs, "serving as "+names[0]) {
			t.Errorf("kubectl logs %s = %q, %v; want labnet's start line", names[0], logs, err)
		}
		// Each node keeps its Pods' logs in its own directory, not in the host's /var/log/pods
		// where the other node's kubelet would remove them as unknown.
		for _, name := range names {
			var found []string
			for _, n := range l.Nodes() {
				m, _ := filepath.Glob(filepath.Join(n.runtime.podLogs(), "default_"+name+"_*"))
				found = append(found, m...)
			}
			host, _ := filepath.Glob(filepath.Join("/var/log/pods", "default_"+name+"_*"))
			if len(found) != 1 || len(host) != 0 {
				t.Errorf("logs of %s in %v and %v; want one directory under its node's", name, found, host)
			}
		}
		out, err := l.Kubectl(ctx, "exec", names[0], "--", "/labnet", "dial", "tcp", eps[1]+":8080", "--count", "1")
		if err != nil || !strings.Contains(out, "web-") {
			t.Errorf("kubectl exec %s -- labnet dial %s:8080 = %q, %v; want the other Pod's name", names[0], eps[1], out, err)
		}

		for _, n := range []string{"node1", "node2"} {
			if err := l.StartKubeProxy(n, "iptables"); err != nil {
				t.Fatal(err)
			}
		}
		ip, err := l.ClusterIP("default", "web")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AddPod("node1", "client", ""); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"node1", "node2"} {
			if err := l.WaitSynced(n); err != nil {
				t.Fatal(err)
			}
		}
		res, err := l.Dial("client", "tcp", ip+":80", 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if res.Hits[name] == 0 {
				t.Errorf("no connection reached %s: %+v", name, res)
			}
		}
	})
	if l == nil {
		return
	}
	// Nothing of the lab is left: no cgroup, mount, process or namespace.
	for _, n := range l.Nodes() {
		rt := n.runtime
		if _, err := os.Stat(filepath.Join(cgroupFS, "memory", rt.cgroupRoot)); err == nil {
			t.Errorf("cgroup %s left behind", rt.cgroupRoot)
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), rt.dir) {
			t.Errorf("mounts under %s left behind", rt.dir)
		}
		for _, p := range []*proc{rt.kubelet, rt.containerd} {
			if !p.exited() {
				t.Errorf("%s still running", p.name)
			}
		}
		if _, err := os.Stat(rt.dir); err == nil {
			t.Errorf("directory %s left behind", rt.dir)
		}
		if netnsExists(n.NetNS) {
			t.Errorf("namespace %s left behind", n.NetNS)
		}
	}
	if links := logLinksInto(l.prefix); len(links) > 0 {
		t.Errorf("links to the nodes' logs left in %s: %v", hostLogLinks, links)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), l.prefix) {
			t.Errorf("process %s left behind: %s", e.Name(), strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	fmt.Fprintln(os.Stderr, "lab: clean")
}

// TestLabKubeProxyDaemonSet: kube-proxy runs as a DaemonSet from the lab's image, configured
// by its ConfigMap, in each mode, and sends a lab pod's connections to a Deployment's Pods.
func TestLabKubeProxyDaemonSet(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			l := Start(t, Options{Nodes: 2, Kubelets: true})
			l.Apply(t, clusterWorkloads)
			if _, err := l.WaitEndpoints("default", "web", 2, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := l.DeployKubeProxy(mode, ""); err != nil {
				t.Fatal(err)
			}
			var want string
			switch mode {
			case "iptables":
				want = "KUBE-SERVICES"
			case "nftables":
				want = "table ip kube-proxy"
			}
			out, err := l.Exec("node2", "sh", "-c", "iptables-save -t nat 2>/dev/null; nft list tables")
			if err != nil || !strings.Contains(out, want) {
				t.Fatalf("node2 holds no %q: %v\n%s", want, err, out)
			}
			ip, err := l.ClusterIP("default", "web")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AddPod("node1", "client", ""); err != nil {
				t.Fatal(err)
			}
			if err := l.WaitSynced("node1"); err != nil {
				t.Fatal(err)
			}
			res, err := l.Dial("client", "tcp", ip+":80", 20)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) != 2 {
				t.Errorf("connections reached %v, want both web Pods", res.Hits)
			}
		})
	}
}

// logLinksInto lists the links of the host's container log directory whose target names prefix.
func logLinksInto(prefix string) []string {
	entries, _ := os.ReadDir(hostLogLinks)
	var left []string
	for _, e := range entries {
		to, err := os.Readlink(filepath.Join(hostLogLinks, e.Name()))
		if err == nil && strings.Contains(to, "/"+prefix) {
			left = append(left, e.Name())
		}
	}
	return left
}
