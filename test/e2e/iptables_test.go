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

func TestMain(m *testing.M) { os.Exit(lab.Main(m)) }

// cluster is the lab with the matrix applied.
type cluster struct {
	*lab.Lab
	bin  string
	pods map[string]*lab.Pod
	// mode and version of the kube-proxy on every node, and the flags it
	// is started with beyond the lab's.
	mode, version string
	proxyArgs     []string
	// matrix is the matrix's EndpointSlices with the lab's addresses.
	matrix []matrixSlice
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

// drift runs drift --local on a node and returns its findings. With the node's kube-proxy
// stopped, nothing on the node tells its version (the lab runs it as a process, with no
// Pod whose image would name it): the release is given, as an operator would.
func (c *cluster) drift(t *testing.T, node string) ([]string, string) {
	t.Helper()
	args := []string{"drift", "--local", "--node", node}
	if !c.KubeProxyRunning(node) {
		args = append(args, "--kube-proxy-version", c.version)
	}
	out, code := c.svctrace(t, node, append(args, "-o", "json")...)
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
	text, _ := c.svctrace(t, node, append(args, "-o", "wide")...)
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
	return startMatrixArgs(t, mode, version, nil)
}

// startMatrixArgs is startMatrix with kube-proxy started with proxyArgs beyond the lab's flags.
func startMatrixArgs(t *testing.T, mode, version string, proxyArgs []string) *cluster {
	m, err := loadMatrix(matrixFile)
	if err != nil {
		t.Fatal(err)
	}
	l := lab.Start(t, lab.Options{Nodes: 2})
	if version == "" {
		version = l.ProxyVersion
	}
	c := &cluster{Lab: l, bin: buildSvctrace(t), pods: map[string]*lab.Pod{}, mode: mode, version: version, proxyArgs: proxyArgs}
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
	if c.matrix, err = m.expand(c.pods, c.nodeIP); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, m.services)
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

// relabelZones moves every node out of its zone and back, then waits for kube-proxy on
// nodes to sync. A kube-proxy 1.36 started on a node that already has its zone label can
// miss it (see TestModeSwitch) and spread topology-hinted Services over every zone until
// the label changes: a check after a restart is then about that race, not about what the
// restart repaired.
func (c *cluster) relabelZones(t *testing.T, nodes ...string) {
	t.Helper()
	c.setZones(t, "-relabel")
	c.setZones(t, "")
	for _, n := range nodes {
		if err := c.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
	}
}

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
	return slicesYAML(c.matrix, change)
}

// nodeIP is the InternalIP of a lab node, false for no such node.
func (c *cluster) nodeIP(name string) (string, bool) {
	n := c.Node(name)
	if n == nil {
		return "", false
	}
	return n.IP, true
}

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
	return c.StartKubeProxyVersion(node, c.version, c.mode, c.proxyArgs...)
}
