//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/nodeapi"
	"github.com/svctrace/svctrace/test/fleet"
	"github.com/svctrace/svctrace/test/lab"
)

// fleetSnapshot is the bundled capture whose node1 every fleet agent
// reports on.
const fleetSnapshot = "examples/lab-iptables-v1.36.3.snapshot.yaml"

// fleetAgents are the fleet's running agents.
type fleetAgents struct {
	nodes  []string
	agents []fleet.Agent
	// silent is the address of an agent that takes connections and never
	// answers (no Pod points at it until addSilentNode).
	silent string
}

// fleetAddr is node i's address (1-based): the agents run on the host
// network, so it is the node's and its agent Pod's. All of 127.0.0.0/8 is
// local: the agents and the CLI share the control plane's namespace.
func fleetAddr(i int) string { return fmt.Sprintf("127.1.%d.%d", i/250, i%250+1) }

// startFleet makes n nodes (node1 is the lab's), an agent Pod on each as
// the DaemonSet would (Running, with its address), and starts their agents
// in one process in the control plane's namespace, authenticated as the
// svctrace-agent ServiceAccount with deploy/agent.yaml's roles. It returns
// once every agent has published its certificate on its Pod.
func startFleet(t *testing.T, l *lab.Lab, n, workers int) *fleetAgents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := repoRoot(t)
	l.Apply(t, agentRBAC(t, root))
	kubeconfig := agentKubeconfig(t, l)

	f := &fleetAgents{silent: fleetAddr(n+1) + fmt.Sprint(":", nodeapi.DefaultPort)}
	var objs, status []lab.Create
	for i := 1; i <= n; i++ {
		node := fmt.Sprintf("node%d", i)
		f.nodes = append(f.nodes, node)
		a := fleet.Agent{Node: node, Pod: "svctrace-agent-" + node, Address: fmt.Sprintf("%s:%d", fleetAddr(i), nodeapi.DefaultPort)}
		f.agents = append(f.agents, a)
		if i > 1 {
			objs = append(objs, nodeObject(node))
		}
		status = append(status, nodeStatus(node, fleetAddr(i)))
	}
	start := time.Now()
	if err := l.CreateAll(ctx, workers, objs); err != nil {
		t.Fatal(err)
	}
	objs = objs[:0]
	for _, a := range f.agents {
		objs = append(objs, agentPodObject(a, nil))
		status = append(status, agentPodStatus(a))
	}
	if err := l.CreateAll(ctx, workers, objs); err != nil {
		t.Fatal(err)
	}
	if err := patchAll(ctx, l, workers, status); err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet: %d Nodes and agent Pods created in %v", n, time.Since(start).Round(time.Millisecond))

	dir := t.TempDir()
	agentsFile := filepath.Join(dir, "agents.json")
	b, err := json.Marshal(f.agents)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agentsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fleetagents")
	build := exec.Command("go", "build", "-o", bin, "./test/fleet/cmd/fleetagents")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fleetagents: %v\n%s", err, out)
	}
	start = time.Now()
	_, log := startProcess(t, l.ControlPlaneNetNS(), "fleetagents", 10*time.Second, true, bin, "--kubeconfig", kubeconfig,
		"--agents", agentsFile, "--snapshot", filepath.Join(root, fleetSnapshot), "--silent", f.silent, "--workers", fmt.Sprint(workers))
	waitLog(t, log, "ready: ", 10*time.Minute)
	waitPublished(t, l, n, 10*time.Minute)
	t.Logf("fleet: %d agents listening and published in %v", n, time.Since(start).Round(time.Millisecond))
	return f
}

// addSilentNode adds a node whose agent Pod runs and publishes an address
// that takes connections and never answers.
func (f *fleetAgents) addSilentNode(t *testing.T, l *lab.Lab) (node, pod string) {
	t.Helper()
	ctx := context.Background()
	node = "node-silent"
	host, _, _ := strings.Cut(f.silent, ":")
	a := fleet.Agent{Node: node, Pod: "svctrace-agent-" + node, Address: f.silent}
	_, fp, err := nodeapi.NewCert(node, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateAll(ctx, 1, []lab.Create{nodeObject(node), agentPodObject(a, map[string]string{
		nodeapi.CertAnnotation: fp, nodeapi.PortAnnotation: fmt.Sprint(nodeapi.DefaultPort)})}); err != nil {
		t.Fatal(err)
	}
	if err := patchAll(ctx, l, 1, []lab.Create{nodeStatus(node, host), agentPodStatus(a)}); err != nil {
		t.Fatal(err)
	}
	return node, a.Pod
}

// agentRBAC is deploy/agent.yaml up to its DaemonSet: the namespace, the
// ServiceAccount and its roles (the agents' Pods are the test's).
func agentRBAC(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	before, _, ok := strings.Cut(string(b), "\nkind: DaemonSet")
	if !ok {
		t.Fatal("deploy/agent.yaml has no DaemonSet")
	}
	return before[:strings.LastIndex(before, "\n---")]
}

// agentKubeconfig is the lab's kubeconfig with a token of the
// svctrace-agent ServiceAccount (TokenRequest) instead of admin's.
func agentKubeconfig(t *testing.T, l *lab.Lab) string {
	t.Helper()
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":7200}}`)
	out, err := l.Request(context.Background(), "POST", "/api/v1/namespaces/"+inspect.AgentNamespace+"/serviceaccounts/svctrace-agent/token", "application/json", body)
	if err != nil {
		t.Fatalf("a token of the agent's ServiceAccount: %v", err)
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("TokenRequest: %v: %s", err, out)
	}
	cfg, err := clientcmd.LoadFromFile(l.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Token, a.TokenFile, a.ClientCertificate, a.ClientCertificateData, a.ClientKey, a.ClientKeyData = tr.Status.Token, "", "", nil, "", nil
	}
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func nodeObject(node string) lab.Create {
	return lab.Create{Path: "/api/v1/nodes", Body: mustJSON(map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": node, "labels": map[string]string{"kubernetes.io/hostname": node, "kubernetes.io/os": "linux"}}})}
}

// nodeStatus is a merge patch of node's status: its address, Ready.
func nodeStatus(node, ip string) lab.Create {
	now := time.Now().UTC().Format(time.RFC3339)
	return lab.Create{Path: "/api/v1/nodes/" + node + "/status", Body: mustJSON(map[string]any{"status": map[string]any{
		"addresses": []map[string]string{{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": node}},
		"conditions": []map[string]string{{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "svctrace fleet node",
			"lastHeartbeatTime": now, "lastTransitionTime": now}}}})}
}

// agentPodObject is a's Pod as the DaemonSet of deploy/agent.yaml makes
// it: on the host network, its labels, on its node.
func agentPodObject(a fleet.Agent, annotations map[string]string) lab.Create {
	return lab.Create{Path: "/api/v1/namespaces/" + inspect.AgentNamespace + "/pods", Body: mustJSON(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": a.Pod, "annotations": annotations,
			"labels": map[string]string{"app.kubernetes.io/name": "svctrace", "app.kubernetes.io/component": "agent"}},
		"spec": map[string]any{"nodeName": a.Node, "hostNetwork": true, "serviceAccountName": "svctrace-agent",
			"containers": []map[string]any{{"name": inspect.AgentContainer, "image": "svctrace:fleet",
				"ports": []map[string]any{{"name": "api", "containerPort": nodeapi.DefaultPort}}}}}})}
}

// agentPodStatus is a merge patch of a's Pod status: Running and Ready
// at its node's address.
func agentPodStatus(a fleet.Agent) lab.Create {
	ip, _, _ := strings.Cut(a.Address, ":")
	now := time.Now().UTC().Format(time.RFC3339)
	return lab.Create{Path: "/api/v1/namespaces/" + inspect.AgentNamespace + "/pods/" + a.Pod + "/status", Body: mustJSON(map[string]any{
		"status": map[string]any{"phase": "Running", "podIP": ip, "podIPs": []map[string]string{{"ip": ip}}, "hostIP": ip,
			"hostIPs": []map[string]string{{"ip": ip}}, "startTime": now,
			"conditions": []map[string]string{{"type": "Ready", "status": "True", "lastTransitionTime": now}}}})}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// patchAll sends each merge patch as admin, workers at once.
func patchAll(ctx context.Context, l *lab.Lab, workers int, patches []lab.Create) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan lab.Create)
	)
	for range max(1, workers) {
		wg.Go(func() {
			for p := range next {
				if _, err := l.Request(ctx, "PATCH", p.Path, "application/merge-patch+json", p.Body); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("PATCH %s: %w", p.Path, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range patches {
		next <- p
	}
	close(next)
	wg.Wait()
	return firstErr
}

// waitLog waits until the log at path holds text.
func waitLog(t *testing.T, path, text string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in %s within %v:\n%s", text, path, timeout, tail(string(b), 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPublished waits until n agent Pods carry their certificate.
func waitPublished(t *testing.T, l *lab.Lab, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := l.Request(context.Background(), "GET", "/api/v1/namespaces/"+inspect.AgentNamespace+"/pods", "", nil)
		var list struct {
			Items []struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"items"`
		}
		published := 0
		if err == nil && json.Unmarshal(out, &list) == nil {
			for _, p := range list.Items {
				if p.Metadata.Annotations[nodeapi.CertAnnotation] != "" {
					published++
				}
			}
		}
		if published >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d agents published their certificate within %v (%v)", published, n, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
