//go:build linux

// Package e2e proves svctrace against the real thing: a real
// kube-apiserver and real kube-proxy instances (built from the published
// modules) in network namespaces, with real traffic between pod
// namespaces.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/test/lab"
	"github.com/svctrace/svctrace/trace"
)

func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		if err := lab.CleanupStale(); err != nil {
			fmt.Fprintln(os.Stderr, "lab: stale cleanup:", err)
		}
	}
	os.Exit(m.Run())
}

// cluster is the lab with the matrix applied.
type cluster struct {
	*lab.Lab
	bin  string
	pods map[string]*lab.Pod
	// mode and version of the kube-proxy on every node.
	mode, version string
}

// svctrace runs the binary inside a node's network namespace against the
// lab's API server and returns its output and exit code.
func (c *cluster) svctrace(t *testing.T, node string, args ...string) (string, int) {
	t.Helper()
	ns, err := c.NetNS(node)
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"netns", "exec", ns, c.bin}, args...)
	argv = append(argv, "--kubeconfig", c.Kubeconfig)
	cmd := exec.Command("ip", argv...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("svctrace %v: %v", args, err)
	}
	return string(out), 0
}

// drift runs drift --local on a node and returns its findings.
func (c *cluster) drift(t *testing.T, node string) ([]string, string) {
	t.Helper()
	out, code := c.svctrace(t, node, "drift", "--local", "--node", node, "-o", "json")
	if code > 1 {
		t.Fatalf("drift on %s: exit %d:\n%s", node, code, out)
	}
	var r analysis.DriftReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("drift on %s: %v:\n%s", node, err, out)
	}
	var fs []string
	for _, f := range r.Findings {
		fs = append(fs, f.Type+" "+f.Service+" "+f.Expected+"|"+f.Observed)
	}
	sort.Strings(fs)
	if (len(fs) > 0) != (code == 1) {
		t.Errorf("drift on %s: exit %d with %d findings", node, code, len(fs))
	}
	text, _ := c.svctrace(t, node, "drift", "--local", "--node", node, "-o", "wide")
	return fs, text
}

// predictedArgs asks trace where a connection goes: the set of pods
// behind the DNAT targets, and the verdicts of branches not forwarded.
func (c *cluster) predictedArgs(t *testing.T, node string, args []string) (map[string]bool, []string) {
	t.Helper()
	argv := append([]string{"trace", "--local", "--node", node, "-o", "json"}, args...)
	out, code := c.svctrace(t, node, argv...)
	if code != 0 {
		t.Fatalf("trace %v: exit %d:\n%s", args, code, out)
	}
	var r trace.TraceReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("trace: %v:\n%s", err, out)
	}
	pods := map[string]bool{}
	var other []string
	for _, b := range r.Branches {
		if b.Verdict != "forward" {
			other = append(other, b.Verdict)
			continue
		}
		ip, _, _ := strings.Cut(b.DNAT, ":")
		name := ""
		for n, p := range c.pods {
			if p.IP == ip {
				name = n
			}
		}
		if name == "" {
			t.Fatalf("trace predicts %s, which is no lab pod", b.DNAT)
		}
		pods[name] = true
	}
	return pods, other
}

func buildSvctrace(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-svctrace")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/svctrace/svctrace/cmd/kubectl-svctrace")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building svctrace: %v\n%s", err, out)
	}
	return bin
}

// startMatrix starts a two-node lab with kube-proxy of that mode and
// version ("" for the lab's default) on both nodes and applies every
// Service of the matrix.
func startMatrix(t *testing.T, mode, version string) *cluster {
	l := lab.Start(t, lab.Options{Nodes: 2})
	if version == "" {
		version = l.ProxyVersion
	}
	c := &cluster{Lab: l, bin: buildSvctrace(t), pods: map[string]*lab.Pod{}, mode: mode, version: version}
	for _, n := range []string{"node1", "node2"} {
		if err := c.startProxy(n); err != nil {
			t.Fatal(err)
		}
	}
	add := func(spec lab.PodSpec) {
		p, err := l.AddPodSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		c.pods[spec.Name] = p
	}
	web := []lab.Listener{{Proto: "TCP", Port: 8080, Name: "web"}}
	add(lab.PodSpec{Node: "node1", Name: "web-1", Labels: map[string]string{"app": "web"}, Listeners: web})
	add(lab.PodSpec{Node: "node1", Name: "web-2", Labels: map[string]string{"app": "web"}, Listeners: web})
	add(lab.PodSpec{Node: "node2", Name: "web-3", Labels: map[string]string{"app": "web"}, Listeners: web})
	dns := []lab.Listener{lab.UDP(5353), lab.TCP(5353)}
	add(lab.PodSpec{Node: "node1", Name: "dns-1", Labels: map[string]string{"app": "dns"}, Listeners: dns})
	add(lab.PodSpec{Node: "node2", Name: "dns-2", Labels: map[string]string{"app": "dns"}, Listeners: dns})
	add(lab.PodSpec{Node: "node1", Name: "client", NoAPIObject: true})
	add(lab.PodSpec{Node: "node2", Name: "client-2", NoAPIObject: true})

	c.setZones(t, "")
	l.Apply(t, services)
	l.Apply(t, c.slices(nil))
	for _, n := range []string{"node1", "node2"} {
		if err := l.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// zones are the nodes' zones, for the topology-hint case.
var zones = map[string]string{"node1": "zone-a", "node2": "zone-b"}

// setZones labels each node with its zone (plus suffix).
func (c *cluster) setZones(t *testing.T, suffix string) {
	t.Helper()
	for n, zone := range zones {
		body := fmt.Sprintf(`{"metadata":{"labels":{"topology.kubernetes.io/zone":%q}}}`, zone+suffix)
		if _, err := c.Request(t.Context(), "PATCH", "/api/v1/nodes/"+n, "application/merge-patch+json", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
}

// slices returns every EndpointSlice of the matrix; change may edit the
// endpoint lists by slice name first.
func (c *cluster) slices(change func(name string, eps []endpoint) []endpoint) string {
	ep := func(pod string) endpoint { return endpoint{pod: pod, ip: c.pods[pod].IP, node: c.pods[pod].Node} }
	webEps := []endpoint{ep("web-1"), ep("web-2"), ep("web-3")}
	http := []slicePort{{"http", "TCP", 8080}}
	term := ep("web-3")
	term.notReady, term.terminating = true, true
	zoned := []endpoint{ep("web-1"), ep("web-2"), ep("web-3")}
	zoned[0].zone, zoned[1].zone, zoned[2].zone = "zone-a", "zone-a", "zone-b"
	type sl struct {
		svc, name string
		ports     []slicePort
		eps       []endpoint
	}
	all := []sl{
		{"web", "web-1", http, webEps},
		{"web-np", "web-np-1", http, webEps},
		{"web-lb", "web-lb-1", http, webEps},
		{"web-ext", "web-ext-1", http, webEps},
		{"web-local", "web-local-1", http, webEps},
		{"web-itp", "web-itp-1", http, webEps},
		{"sticky", "sticky-1", http, webEps},
		{"named", "named-1", http, webEps},
		{"multi", "multi-1", []slicePort{{"http", "TCP", 8080}, {"alt", "TCP", 8080}}, webEps},
		{"dns", "dns-1", []slicePort{{"dns", "UDP", 5353}, {"dns-tcp", "TCP", 5353}}, []endpoint{ep("dns-1"), ep("dns-2")}},
		{"sctp", "sctp-1", []slicePort{{"sctp", "SCTP", 9999}}, webEps},
		{"empty", "empty-1", http, nil},
		{"draining", "draining-1", http, []endpoint{term}},
		{"zoned", "zoned-1", http, zoned},
		{"kube-api", "kube-api-1", []slicePort{{"https", "TCP", 6443}}, []endpoint{{ip: c.Node("node1").IP}}},
		{"hostnet", "hostnet-1", []slicePort{{"http", "TCP", 8081}}, []endpoint{{pod: "hostnet-1", ip: c.Node("node2").IP, node: "node2"}}},
		{"local-node1", "local-node1-1", http, []endpoint{ep("web-1"), ep("web-2")}},
		{"crowded", "crowded-1", http, []endpoint{ep("web-1"), ep("web-3"), {ip: lastPodHost, node: "node2"}}},
	}
	var docs []string
	for _, s := range all {
		eps := s.eps
		if change != nil {
			eps = change(s.name, eps)
		}
		docs = append(docs, sliceYAML(s.svc, s.name, s.ports, eps))
	}
	return strings.Join(docs, "---\n")
}

// lastPodHost is the last host of the lab's cluster CIDR (10.244.0.0/16):
// an endpoint there is where a probe standing for "a pod" would stand if it
// did not avoid endpoints.
const lastPodHost = "10.244.255.254"

func clusterIP(t *testing.T, c *cluster, name string) string {
	t.Helper()
	ip, err := c.ClusterIP("default", name)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// waitDrift polls drift until it gives the wanted findings (kube-proxy, or
// the API server's watch, may take a moment) and fails with the last
// answer otherwise.
func waitDrift(t *testing.T, c *cluster, node string, want []string) {
	t.Helper()
	sort.Strings(want)
	var got []string
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, text = c.drift(t, node)
		if matchFindings(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("drift on %s:\n got %q\nwant %q (prefixes)\n%s", node, got, want, text)
		}
		time.Sleep(time.Second)
	}
}

func matchFindings(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

func (c *cluster) startProxy(node string) error {
	return c.StartKubeProxyVersion(node, c.version, c.mode)
}
