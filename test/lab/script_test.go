//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLabScript runs hack/lab.sh as a person would: up gives two Ready nodes reachable with the
// printed KUBECONFIG from this host, kube-proxy runs as a DaemonSet with one Pod per node,
// kubectl logs and exec reach a Pod; down leaves no namespace, mount, cgroup, directory,
// interface or process behind.
func TestLabScript(t *testing.T) {
	requireRoot(t)
	requireClusterTools(t)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "hack", "lab.sh")
	state := t.TempDir()
	env := append(os.Environ(), "SVCTRACE_LAB_STATE="+state, "SVCTRACE_LAB_API=127.0.0.1:0")
	lab := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	linksBefore := hostLinks(t)
	out, err := lab("up", "--proxy-mode", "nftables")
	if err != nil {
		lab("down")
		t.Fatalf("hack/lab.sh up: %v\n%s", err, out)
	}
	var st struct {
		Prefix, Kubeconfig string
		Version            string
	}
	b, err := os.ReadFile(filepath.Join(state, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.Prefix == "" {
		lab("down")
		t.Fatalf("state.json: %v\n%s", err, b)
	}
	downed := false
	defer func() {
		if !downed {
			lab("down")
		}
	}()
	if !strings.Contains(out, "export KUBECONFIG="+st.Kubeconfig) || !strings.Contains(out, "ip netns exec "+st.Prefix+"node1") {
		t.Errorf("up does not say how to use the lab:\n%s", out)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(CacheDir(), st.Version, "kubectl"), append([]string{"--kubeconfig", st.Kubeconfig}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return strings.TrimSpace(string(b))
	}
	ready := kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
	if ready != "node1=True node2=True" {
		t.Errorf("nodes: %q, want node1 and node2 Ready", ready)
	}
	pods := strings.Fields(kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "-o", "jsonpath={range .items[*]}{.metadata.name},{.spec.nodeName} {end}"))
	onNodes := map[string]int{}
	for _, p := range pods {
		_, node, _ := strings.Cut(p, ",")
		onNodes[node]++
	}
	if len(pods) != 2 || onNodes["node1"] != 1 || onNodes["node2"] != 1 {
		t.Fatalf("kube-proxy Pods: %v, want one per node", pods)
	}
	pod, _, _ := strings.Cut(pods[0], ",")
	if logs := kubectl("-n", "kube-system", "logs", pod); !strings.Contains(logs, "nftables") {
		t.Errorf("kubectl logs %s says nothing of nftables:\n%s", pod, logs)
	}
	if v := kubectl("-n", "kube-system", "exec", pod, "--", "/usr/local/bin/kube-proxy", "--version"); !strings.Contains(v, st.Version) {
		t.Errorf("kubectl exec %s -- kube-proxy --version = %q, want %s", pod, v, st.Version)
	}

	// An image archive loaded into every node, as the README's set-up
	// loads svctrace's: here kube-proxy's, which the lab built.
	archive, err := buildKubeProxyImage(context.Background(), st.Version)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := lab("load-image", archive); err != nil || !strings.Contains(out, "into node node1") || !strings.Contains(out, "into node node2") {
		t.Errorf("hack/lab.sh load-image: %v\n%s", err, out)
	}
	if out, err := lab("images"); err != nil || strings.Count(out, "kube-proxy:"+st.Version) != 2 {
		t.Errorf("hack/lab.sh images: %v\n%s", err, out)
	}
	if out, err := lab("load-image", "/nonexistent.tar"); err == nil || !strings.Contains(out, "usage: hack/lab.sh load-image FILE") {
		t.Errorf("hack/lab.sh load-image of no file: %v\n%s", err, out)
	}

	out, err = lab("down")
	downed = true
	if err != nil {
		t.Fatalf("hack/lab.sh down: %v\n%s", err, out)
	}
	// Checked here too, not only by the script.
	if b, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(b), st.Prefix) {
		t.Errorf("namespaces left: %s", b)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), "/"+st.Prefix) {
		t.Errorf("mounts left under */%s*", st.Prefix)
	}
	hs, _ := cgroupHierarchies()
	for _, h := range hs {
		if m, _ := filepath.Glob(filepath.Join(h, st.Prefix+"*")); len(m) > 0 {
			t.Errorf("cgroups left: %v", m)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(os.TempDir(), st.Prefix+"*")); len(m) > 0 {
		t.Errorf("directories left: %v", m)
	}
	if b, _ := exec.Command("pgrep", "-f", "/"+st.Prefix).Output(); len(b) > 0 {
		t.Errorf("processes left: %s", b)
	}
	if links := logLinksInto(st.Prefix); len(links) > 0 {
		t.Errorf("links to the nodes' logs left in %s: %v", hostLogLinks, links)
	}
	if _, err := os.Stat(filepath.Join(state, "state.json")); err == nil {
		t.Errorf("state left in %s", state)
	}
	if after := hostLinks(t); after != linksBefore {
		t.Errorf("host interfaces changed:\nbefore %s\nafter  %s", linksBefore, after)
	}
}

// hostLinks lists this namespace's interfaces by name.
func hostLinks(t *testing.T) string {
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, strings.TrimSuffix(f[1], ":"))
		}
	}
	return strings.Join(names, " ")
}
