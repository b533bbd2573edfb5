//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/tmuxtest"
	"github.com/svctrace/svctrace/test/lab"
)

// TestAgentDaemonSet deploys the agent as the README's quick start says
// (hack/image.sh -push, kubectl apply -f deploy/, kubectl set image) on the
// lab cluster whose kube-proxy is a DaemonSet, uses the CLI from the
// control plane's namespace (a workstation's view), and has a real
// Prometheus scrape both agents with the shipped alert rules:
//   - both agents become ready, their scrapes pass promtool check metrics,
//     and Prometheus scrapes both;
//   - a burst of Service and endpoint changes fires nothing;
//   - with kube-proxy's Pod off node1, a rule deleted there fires
//     SvctraceDrift for node1 only, which resolves once kube-proxy is back.
func TestAgentDaemonSet(t *testing.T) {
	l := lab.Start(t, lab.Options{Nodes: 2, Kubelets: true})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root := repoRoot(t)
	promBin, err := lab.PrometheusTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// docs/cluster.md's commands, run as written: build and push the
	// image to a registry the nodes pull from (one registry, served on the
	// same loopback address in the host's and in each node's namespace),
	// then deploy and use the agent. The document's registry, Service and
	// node are the lab's.
	registry := startRegistry(t, l)
	image := registry + "/svctrace:v0.1.0"
	steps := docCommands(t, filepath.Join(root, "docs", "cluster.md"), "",
		map[string]string{"registry.example.com": registry, "shop/cart": "default/web", "node-7": "node1"})
	if len(steps) < 2 || !strings.HasPrefix(steps[0], "hack/image.sh ") || !strings.Contains(steps[0], image) {
		t.Fatalf("docs/cluster.md no longer starts by building %s:\n%s", image, strings.Join(steps, "\n"))
	}
	bin := buildSvctrace(t)
	shell := labShell(l, bin, root)
	_, err = os.Stat(filepath.Join(root, "svctrace-image.tar"))
	hadArchive := err == nil
	if out, err := shell(ctx, "", steps[0]); err != nil {
		t.Fatalf("%s: %v\n%s", steps[0], err, out)
	}
	if !hadArchive {
		os.Remove(filepath.Join(root, "svctrace-image.tar"))
	}
	l.Apply(t, podDeployment("web", "node2", "web", 2, false, `--tcp, "8080"`)+`---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	eps, err := l.WaitEndpoints("default", "web", 2, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DeployKubeProxy("iptables", ""); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := l.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	// A workstation's view: the CLI in the control plane's namespace, on
	// no node, with only the kubeconfig.
	cli := func(args ...string) (string, int) {
		t.Helper()
		argv := append([]string{"netns", "exec", l.ControlPlaneNetNS(), bin}, args...)
		out, err := exec.CommandContext(ctx, "ip", append(argv, "--kubeconfig", l.Kubeconfig)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := cli("drift", "--node", "node1"); code != 2 || !strings.Contains(out, "no svctrace agent Pod runs there") ||
		!strings.Contains(out, "kubectl apply -f deploy/") {
		t.Errorf("drift --node node1 without an agent: exit %d\n%s", code, out)
	}
	t.Run("helper pods where no agent runs", func(t *testing.T) {
		helpers := func() string {
			out, err := l.Kubectl(ctx, "get", "pods", "-A", "-l", "app.kubernetes.io/component=helper", "-o", "name")
			if err != nil {
				t.Fatalf("kubectl get pods: %v\n%s", err, out)
			}
			return strings.TrimSpace(out)
		}
		out, code := cli("explain", "default/web", "--node", "node2", "--helper-pod", "--helper-image", image)
		if code != 0 || !strings.Contains(out, "Service default/web on node node2 (iptables mode)") {
			t.Errorf("explain --helper-pod: exit %d\n%s", code, out)
		}
		out, code = cli("drift", "--all-nodes", "--helper-pod", "--helper-image", image, "-A")
		if code != 0 || !strings.Contains(out, "no drift") || !strings.Contains(out, "node node1 (iptables mode)") ||
			!strings.Contains(out, "node node2 (iptables mode)") {
			t.Errorf("drift --all-nodes --helper-pod: exit %d\n%s", code, out)
		}
		if left := helpers(); left != "" {
			t.Errorf("helper Pods left after explain and drift: %s", left)
		}
		// In a namespace pinned by deploy/helper-policy.yaml, the CLI's
		// helper runs, and a Pod that is anything more is refused.
		kubectl("apply", "-f", filepath.Join(root, "deploy", "helper-policy.yaml"))
		kubectl("create", "namespace", "svctrace-helpers")
		kubectl("label", "namespace", "svctrace-helpers", "svctrace.dev/helpers=pinned")
		for deadline := time.Now().Add(time.Minute); ; {
			out, err := l.Kubectl(ctx, "-n", "svctrace-helpers", "run", "escape", "--image", image, "--privileged", "--labels",
				"app.kubernetes.io/name=svctrace,app.kubernetes.io/component=helper", "--overrides", `{"spec":{"hostPID":true}}`)
			if err != nil && strings.Contains(err.Error()+out, "ValidatingAdmissionPolicy 'svctrace-helper-pods'") {
				break
			}
			if err == nil {
				_, _ = l.Kubectl(ctx, "-n", "svctrace-helpers", "delete", "pod", "escape", "--grace-period=0")
			}
			if time.Now().After(deadline) {
				t.Fatalf("a privileged Pod in the pinned helper namespace: %v\n%s", err, out)
			}
			time.Sleep(time.Second) // the policy takes a moment to load
		}
		out, code = cli("explain", "default/web", "--node", "node2", "--helper-pod", "--helper-image", image, "--helper-namespace", "svctrace-helpers")
		if code != 0 || !strings.Contains(out, "Service default/web on node node2 (iptables mode)") {
			t.Errorf("explain --helper-pod in the pinned namespace: exit %d\n%s", code, out)
		}
		// Interrupted while its helper cannot start: the Pod goes too.
		argv := []string{"netns", "exec", l.ControlPlaneNetNS(), bin, "drift", "--node", "node1", "--helper-pod",
			"--helper-image", "svctrace.local/no-such-image:0", "--kubeconfig", l.Kubeconfig}
		run := func() *exec.Cmd {
			cmd := exec.Command("ip", argv...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); helpers() == "" && time.Now().Before(deadline); {
				time.Sleep(200 * time.Millisecond)
			}
			if helpers() == "" {
				t.Fatal("no helper Pod was made")
			}
			return cmd
		}
		cmd := run()
		_ = cmd.Process.Signal(os.Interrupt) // ip netns exec has exec'd svctrace: this is its PID
		_ = cmd.Wait()
		for deadline := time.Now().Add(30 * time.Second); helpers() != "" && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if left := helpers(); left != "" {
			t.Errorf("helper Pod left after Ctrl-C: %s", left)
		}
		// Killed: the Pod stays, and cleanup deletes it.
		cmd = run()
		_ = cmd.Process.Kill() // ip netns exec has exec'd svctrace: this is its PID
		_ = cmd.Wait()
		if out, code := cli("cleanup", "-A"); code != 0 || !strings.Contains(out, "deleted helper Pod default/svctrace-helper-node1-") {
			t.Errorf("cleanup: exit %d\n%s", code, out)
		}
		for deadline := time.Now().Add(30 * time.Second); helpers() != "" && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if left := helpers(); left != "" {
			t.Errorf("helper Pods left after cleanup: %s", left)
		}
	})

	// The rest of docs/cluster.md's commands, from a workstation: the
	// agent deployed, then drift and explain through it.
	for _, line := range steps[1:] {
		out, err := shell(ctx, l.ControlPlaneNetNS(), line)
		if err != nil {
			pods, _ := l.Kubectl(ctx, "-n", "svctrace", "get", "pods", "-o", "wide")
			t.Fatalf("docs/cluster.md: %s: %v\n%s\n%s", line, err, out, pods)
		}
		t.Logf("$ %s\n%s", line, out)
	}
	// A shorter grace period than the default two minutes, for the test's
	// sake: the rest is the manifest as shipped.
	kubectl("-n", "svctrace", "patch", "daemonset", "svctrace-agent", "--type=json",
		`-p=[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--grace-period=15s"},`+
			`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--interval=5s"}]`)
	if out, err := l.Kubectl(ctx, "-n", "svctrace", "rollout", "status", "daemonset/svctrace-agent", "--timeout=3m"); err != nil {
		pods, _ := l.Kubectl(ctx, "-n", "svctrace", "get", "pods", "-o", "wide")
		logs, _ := l.Kubectl(ctx, "-n", "svctrace", "logs", "-l", "app.kubernetes.io/component=agent", "--tail=30")
		t.Fatalf("agent rollout: %v\n%s\n%s\n%s", err, out, pods, logs)
	}

	agents := map[string]*agentProc{}
	for _, n := range []string{"node1", "node2"} {
		ns, err := l.NetNS(n)
		if err != nil {
			t.Fatal(err)
		}
		agents[n] = &agentProc{client: netnsClient(ns)}
		m := agents[n].waitMetrics(t, 2*time.Minute, n+" healthy", func(m string) bool {
			return sumOf(m, "svctrace_last_check_success") == 1 && sumOf(m, "svctrace_drift_findings") == 0 &&
				sumOf(m, "svctrace_pending_findings") == 0
		})
		checkMetricsWithPromtool(t, promBin, m)
	}

	t.Run("reading never grants repair: deploy/cli-rbac.yaml's roles", func(t *testing.T) {
		// Without a role, nothing is read.
		out, code := cli("drift", "--node", "node1", "--as", "alice")
		if code != 2 || !strings.Contains(out, `User "alice" cannot list resource "services"`) {
			t.Errorf("drift as alice without a role: exit %d\n%s", code, out)
		}
		kubectl("create", "clusterrolebinding", "svctrace-alice", "--clusterrole=svctrace-user", "--user=alice")
		kubectl("-n", "svctrace", "create", "rolebinding", "svctrace-alice", "--role=svctrace-user", "--user=alice")
		if out, code := cli("drift", "--node", "node1", "--as", "alice", "-A"); code != 0 || !strings.Contains(out, "no drift") {
			t.Errorf("drift as alice: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--all-nodes", "--as", "alice", "-A"); code != 0 || !strings.Contains(out, "no drift") ||
			!strings.Contains(out, "node node1 (iptables mode)") || !strings.Contains(out, "node node2 (iptables mode)") {
			t.Errorf("drift --all-nodes as alice: exit %d\n%s", code, out)
		}
		// The reading role may not repair, roll back, or exec in an agent.
		out, code = cli("reconcile", "rules", "--node", "node1", "--apply", "--kube-proxy-version", "v1.36.3", "--as", "alice")
		if code != 2 || !strings.Contains(out, `user "alice" may not update nodes/svctrace of node node1`) || !strings.Contains(out, "svctrace-repair") {
			t.Errorf("reconcile rules --apply as alice: exit %d\n%s", code, out)
		}
		out, code = cli("reconcile", "rollback", "--node", "node1", "/var/lib/svctrace/backups/rules-node1-x.yaml", "--as", "alice")
		if code != 2 || !strings.Contains(out, "svctrace-repair") {
			t.Errorf("reconcile rollback as alice: exit %d\n%s", code, out)
		}
		pod := strings.TrimSpace(kubectl("-n", "svctrace", "get", "pods", "-l", "app.kubernetes.io/component=agent",
			"--field-selector", "spec.nodeName=node1", "-o", "name"))
		if out, err := l.Kubectl(ctx, "--as", "alice", "-n", "svctrace", "exec", pod, "--", "true"); err == nil ||
			!strings.Contains(err.Error(), `User "alice" cannot create resource "pods/exec"`) {
			t.Errorf("kubectl exec into the agent as alice: %v\n%s", err, out)
		}
		// The agent takes the node's xtables lock, the one kube-proxy
		// takes: the legacy backend's tools work in its read-only
		// container, and wait while the node's lock is held.
		checkXtablesLock(t, l, pod)
		// Bob may find the agents' Pods but read neither the objects nor
		// a node: each agent refuses him, naming the role he lacks.
		kubectl("-n", "svctrace", "create", "rolebinding", "svctrace-bob", "--role=svctrace-user", "--user=bob")
		out, code = cli("drift", "--all-nodes", "--as", "bob")
		if code == 0 || !strings.Contains(out, `user "bob" may not get nodes/svctrace of node node2: that needs the svctrace-user ClusterRole`) {
			t.Errorf("drift as bob: exit %d\n%s", code, out)
		}
		// Carol repairs: the repair role passes the agent's check (and
		// kube-proxy, running and in sync, refuses the write itself).
		kubectl("create", "clusterrolebinding", "svctrace-carol", "--clusterrole=svctrace-user", "--user=carol")
		kubectl("-n", "svctrace", "create", "rolebinding", "svctrace-carol", "--role=svctrace-user", "--user=carol")
		kubectl("create", "clusterrolebinding", "svctrace-repair-carol", "--clusterrole=svctrace-repair", "--user=carol")
		out, code = cli("reconcile", "rules", "--node", "node1", "--apply", "--kube-proxy-version", "v1.36.3", "--as", "carol")
		if strings.Contains(out, "may not") || strings.Contains(out, "forbidden") {
			t.Errorf("reconcile rules --apply as carol: exit %d\n%s", code, out)
		}
		logs, _ := l.Kubectl(ctx, "-n", "svctrace", "logs", pod)
		if !strings.Contains(logs, "user=carol") {
			t.Errorf("the agent on node1 does not log carol's repair:\n%s", logs)
		}
	})

	t.Run("the CLI reads the nodes through their agents", func(t *testing.T) {
		if out, code := cli("drift", "--all-nodes", "-A", "-o", "wide"); code != 0 || !strings.Contains(out, "no drift") ||
			!strings.Contains(out, "node node1 (iptables mode)") || !strings.Contains(out, "node node2 (iptables mode)") ||
			strings.Count(out, "read from the node]") != 2 {
			t.Errorf("drift --all-nodes: exit %d\n%s", code, out)
		}
		// An idle node's periodic checks confirm the last read (the
		// kernel's digest is unchanged): the report says how old that
		// read is.
		for deadline := time.Now().Add(45 * time.Second); ; {
			out, code := cli("drift", "--all-nodes", "-A")
			if code == 0 && strings.Count(out, "ago, unchanged since)") == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("no confirmed check on both idle nodes within 45 s: exit %d\n%s", code, out)
				break
			}
			time.Sleep(2 * time.Second)
		}
		// As kubectl does, the current namespace unless -A: the report
		// says which, and a namespace with no Service is an error.
		if out, code := cli("drift", "--all-nodes"); code != 0 || !strings.Contains(out, "no drift in namespace default\n") {
			t.Errorf("drift --all-nodes in the current namespace: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--all-nodes", "-n", "defualt"); code != 2 || !strings.Contains(out, `namespace "defualt" has no Service`) ||
			!strings.Contains(out, "default") {
			t.Errorf("drift --all-nodes in a namespace with no Service: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--all-nodes", "default/wbe"); code != 2 || !strings.Contains(out, "did you mean web") {
			t.Errorf("drift --all-nodes of a typo: exit %d\n%s", code, out)
		}
		out, code := cli("explain", "default/web", "--node", "node2")
		if code != 0 || !strings.Contains(out, "Service default/web on node node2 (iptables mode)") || !strings.Contains(out, eps[0]) {
			t.Errorf("explain --node node2: exit %d\n%s", code, out)
		}
		ip, err := l.ClusterIP("default", "web")
		if err != nil {
			t.Fatal(err)
		}
		out, code = cli("trace", "--node", "node2", "--src", "10.244.0.77", "--dst", ip+":80")
		if code != 0 || !strings.Contains(out, eps[0]) || !strings.Contains(out, eps[1]) {
			t.Errorf("trace --node node2: exit %d\n%s", code, out)
		}
		out, code = cli("explain", "default/web", "--all-nodes")
		if code != 0 || !strings.Contains(out, "Service default/web on node node1 (iptables mode)") ||
			!strings.Contains(out, "Service default/web on node node2 (iptables mode)") {
			t.Errorf("explain --all-nodes: exit %d\n%s", code, out)
		}
		all := filepath.Join(t.TempDir(), "all.snap")
		if out, code := cli("collect", "--all-nodes", "-f", all); code != 0 || !strings.Contains(out, "wrote snapshot of 2 nodes") {
			t.Errorf("collect --all-nodes: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--snapshot", all, "--all-nodes", "-A"); code != 0 || !strings.Contains(out, "no drift") {
			t.Errorf("drift of the collected nodes: exit %d\n%s", code, out)
		}
		snap := filepath.Join(t.TempDir(), "node2.snap")
		if out, code := cli("collect", "--node", "node2", "-f", snap); code != 0 {
			t.Errorf("collect --node node2: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--snapshot", snap, "-A"); code != 0 || !strings.Contains(out, "no drift") {
			t.Errorf("drift of the collected snapshot: exit %d\n%s", code, out)
		}
	})

	t.Run("the terminal UI on the live cluster, as alice", func(t *testing.T) {
		logFile := filepath.Join(t.TempDir(), "tui.log")
		t.Cleanup(func() {
			if t.Failed() {
				data, _ := os.ReadFile(logFile)
				t.Logf("the UI's log:\n%s", data)
			}
		})
		p := tmuxtest.Start(t, fmt.Sprintf("ip netns exec %s %s tui --kubeconfig %s --as alice --refresh 0 --log-file %s",
			l.ControlPlaneNetNS(), bin, l.Kubeconfig, logFile))
		p.WaitFor(2*time.Minute, "default/web ", "2/2/2", "live ·")
		p.Keys("/", "default/web ", "Enter", "Enter")
		s := p.WaitFor(time.Minute, "node1", "node2")
		for _, node := range []string{"node1", "node2"} {
			if row := lineWith(s, " "+node+" "); strings.Count(row, "→2") != 3 {
				t.Errorf("default/web is not forwarded to its 2 backends from every class on %s:\n%s", node, s)
			}
		}
		p.Keys("Enter", "Down", "Down", "Enter")
		s = p.WaitFor(time.Minute, "default/web › paths on node1", "DNAT --to-destination")
		if !strings.Contains(lineWith(s, "▸"), eps[0]) && !strings.Contains(lineWith(s, "▸"), eps[1]) {
			t.Errorf("the unfolded backend is none of %v:\n%s", eps, s)
		}
		// A Service made now shows without r: the watch brings it at
		// once, pending; the nodes are read again once kube-proxy has had
		// time to sync it, and then it is neither pending nor drifting.
		p.Keys("Escape", "Escape", "/", "Escape")
		l.Apply(t, `apiVersion: v1
kind: Service
metadata: {name: web2, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
		p.WaitFor(time.Minute, "default/web2")
		deadline := time.Now().Add(time.Minute)
		for {
			row := lineWith(p.Screen(), "default/web2")
			if row != "" && strings.HasSuffix(strings.TrimRight(row, " "), "2/2/2") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("default/web2 still waits or drifts after the re-read:\n%s", p.Screen())
			}
			time.Sleep(500 * time.Millisecond)
		}
		p.Keys("q")
		if st := p.Exited(); st != "0" {
			t.Errorf("q: exit status %s, want 0", st)
		}
	})

	prom := startPrometheus(t, l, promBin, "node1", []string{"node1", "node2"})
	prom.waitQuery(t, `count(up{job="svctrace-agent"} == 1)`, "2", time.Minute)

	t.Run("a burst of changes fires nothing", func(t *testing.T) {
		for i := range 5 {
			l.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: burst-%d, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, i))
		}
		kubectl("scale", "deployment/web", "--replicas=3")
		if _, err := l.WaitEndpoints("default", "web", 3, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := l.Delete("Service", "default", fmt.Sprintf("burst-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		kubectl("scale", "deployment/web", "--replicas=2")
		if _, err := l.WaitEndpoints("default", "web", 2, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		// Long enough for each agent to check several times and for
		// Prometheus to evaluate: no alert may even be pending.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if alerts := prom.alerts(t); len(alerts) > 0 {
				t.Fatalf("alerts during changes kube-proxy applies: %+v", alerts)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("a kernel edit is in drift --all-nodes within 5 s, with its check's age", func(t *testing.T) {
		// kube-proxy runs and has nothing queued: the agent hears the
		// kernel change (nf_tables notifications) and checks at once.
		deleteWebRule(t, l, "node1")
		start := time.Now()
		var out string
		var code int
		for time.Since(start) < 5*time.Second {
			if out, code = cli("drift", "--all-nodes", "-A"); code == 1 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("drift --all-nodes after %v:\n%s", time.Since(start).Round(10*time.Millisecond), out)
		if code != 1 || !strings.Contains(out, "MissingEndpoint  node=node1 service=default/web:http") {
			t.Fatalf("drift --all-nodes 5 s after a rule was deleted on node1: exit %d\n%s", code, out)
		}
		age := regexp.MustCompile(`node node1 \(iptables mode\): \d+ frontends checked ([0-9.]+)(ms|s) ago by its agent, \d+ findings?\n`).FindStringSubmatch(out)
		if age == nil || strings.Contains(out, "waiting for kube-proxy") {
			t.Errorf("drift --all-nodes does not say how old node1's check is, or blames kube-proxy:\n%s", out)
		} else if v, _ := strconv.ParseFloat(age[1], 64); age[2] == "s" && v > 10 {
			t.Errorf("node1's check is %s%s old", age[1], age[2])
		}
		for _, format := range []string{"json", "yaml"} {
			out, code := cli("drift", "--all-nodes", "-A", "-o", format)
			if code != 1 || !regexp.MustCompile(`"?checkAge"?: "?[0-9.]+m?s"?`).MatchString(out) || !strings.Contains(out, "checkedAt") {
				t.Errorf("drift --all-nodes -o %s: exit %d, no check time:\n%s", format, code, out)
			}
		}
		// kube-proxy's restart writes every rule again.
		if err := l.StopKubeProxyPod("node1"); err != nil {
			t.Fatal(err)
		}
		if err := l.StartKubeProxyPod("node1"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			out, code := cli("drift", "--all-nodes", "-A")
			if code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("drift --all-nodes a minute after kube-proxy's restart: exit %d\n%s", code, out)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("kube-proxy gone where its DaemonSet runs it fires SvctraceKubeProxyAbsent", func(t *testing.T) {
		// The DaemonSet still runs kube-proxy on node1, but its new Pod
		// there cannot start (an image no node has, pulled never): the
		// node's rules stay as they were and nothing applies changes.
		image := kubectl("-n", "kube-system", "get", "daemonset/kube-proxy", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		setImage := func(img, strategy string) {
			t.Helper()
			kubectl("-n", "kube-system", "patch", "daemonset/kube-proxy", "-p",
				`{"spec":{"updateStrategy":{"type":"`+strategy+`"},"template":{"spec":{"containers":[{"name":"kube-proxy","image":"`+img+`"}]}}}}`)
			kubectl("-n", "kube-system", "delete", "pod", "-l", "k8s-app=kube-proxy", "--field-selector=spec.nodeName=node1", "--wait=true")
		}
		setImage("registry.invalid/kube-proxy:v1.36.3", "OnDelete")
		alerts := prom.waitAlert(t, "SvctraceKubeProxyAbsent", "firing", 2*time.Minute)
		if len(alerts) != 1 || alerts[0].Labels["instance"] != "node1" {
			t.Errorf("SvctraceKubeProxyAbsent %+v, want it for node1 alone", alerts)
		}
		// Its version is the DaemonSet's image's, as a repair needs it.
		m := agents["node1"].waitMetrics(t, time.Minute, "kube-proxy's version from its DaemonSet", func(m string) bool {
			return strings.Contains(m, `svctrace_kube_proxy_absent 1`) && strings.Contains(m, `version="v1.36.3"`)
		})
		if !strings.Contains(m, "svctrace_kube_proxy_info{") {
			t.Errorf("no kube-proxy info while kube-proxy is absent:\n%s", m)
		}
		out, _ := cli("drift", "--all-nodes", "-A")
		if !strings.Contains(out, "node node1: kube-proxy does not answer on this node") || !strings.Contains(out, "where DaemonSet kube-system/kube-proxy runs it") {
			t.Errorf("drift --all-nodes while kube-proxy is absent on node1:\n%s", out)
		}
		setImage(image, "RollingUpdate")
		if err := l.StartKubeProxyPod("node1"); err != nil { // waits for its Pod to run
			t.Fatal(err)
		}
		prom.waitNoAlerts(t, 2*time.Minute)
	})

	t.Run("a rule deleted on node1 fires SvctraceDrift there", func(t *testing.T) {
		if err := l.StopKubeProxyPod("node1"); err != nil {
			t.Fatal(err)
		}
		deleteWebRule(t, l, "node1")
		// instance is the node's name, as deploy/prometheus/prometheus.yml
		// relabels it.
		alerts := prom.waitAlert(t, "SvctraceDrift", "firing", 2*time.Minute)
		if len(alerts) != 1 || alerts[0].Labels["instance"] != "node1" || alerts[0].Labels["job"] != "svctrace-agent" {
			t.Errorf("SvctraceDrift %+v, want it for node1 alone", alerts)
		}
		out, code := cli("drift", "--all-nodes", "-A")
		if code != 1 || !strings.Contains(out, "MissingEndpoint  node=node1 service=default/web:http") ||
			!regexp.MustCompile(`node node2 \(iptables mode\): \d+ frontends? checked [0-9.]+m?s ago by its agent( \(rules read [0-9.ms]+ ago, unchanged since\))?, 0 findings`).MatchString(out) {
			t.Errorf("drift --all-nodes after the rule was deleted: exit %d\n%s", code, out)
		}
		// The repair from the workstation, through node1's agent, which
		// keeps the backup on the node; then its rollback.
		out, code = cli("reconcile", "rules", "--node", "node1", "--apply", "--kube-proxy-version", "v1.36.3", "--as", "carol")
		backup := regexp.MustCompile(`backup: (/var/lib/svctrace/backups/rules-node1-\S+\.yaml)`).FindStringSubmatch(out)
		if code != 0 || backup == nil || !strings.Contains(out, "read again: no drift") || !strings.Contains(out, "fixes MissingEndpoint default/web:http") {
			t.Fatalf("reconcile rules --node node1 --apply: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--node", "node1", "-A"); code != 0 {
			t.Errorf("drift after the repair: exit %d\n%s", code, out)
		}
		// The conntrack repair goes the same way: for carol, not for alice.
		if out, code := cli("reconcile", "conntrack", "--node", "node1", "--apply", "--as", "carol"); code != 0 ||
			!strings.Contains(out, "node node1: 0 stale conntrack entries") || !strings.Contains(out, "read again: 0 stale entries left") {
			t.Errorf("reconcile conntrack --node node1 --apply as carol: exit %d\n%s", code, out)
		}
		if out, code := cli("reconcile", "conntrack", "--node", "node1", "--apply", "--as", "alice"); code != 2 || !strings.Contains(out, "svctrace-repair") {
			t.Errorf("reconcile conntrack --node node1 --apply as alice: exit %d\n%s", code, out)
		}
		if out, code := cli("reconcile", "rollback", "--node", "node1", backup[1], "--as", "carol"); code != 0 || !strings.Contains(out, "1 change put back") {
			t.Errorf("reconcile rollback --node node1: exit %d\n%s", code, out)
		}
		if out, code := cli("drift", "--node", "node1", "-A"); code != 1 || !strings.Contains(out, "MissingEndpoint") {
			t.Errorf("drift after the rollback: exit %d\n%s", code, out)
		}
		if err := l.StartKubeProxyPod("node1"); err != nil {
			t.Fatal(err)
		}
		prom.waitNoAlerts(t, 2*time.Minute)
	})
}

// checkXtablesLock runs iptables-legacy, which takes /run/xtables.lock
// for every command, in the agent's Pod: it succeeds, and while this
// test holds the node's lock file (the host's: the lab's nodes share its
// file system) it waits and gives up, as it would for kube-proxy.
func checkXtablesLock(t *testing.T, l *lab.Lab, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	legacy := []string{"-n", "svctrace", "exec", pod, "--", "iptables-legacy", "-w", "1", "-t", "filter", "-n", "-L", "INPUT"}
	if out, err := l.Kubectl(ctx, legacy...); err != nil {
		t.Errorf("iptables-legacy in the agent's Pod: %v\n%s", err, out)
		return
	}
	f, err := os.OpenFile("/run/xtables.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	out, err := l.Kubectl(ctx, legacy...)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err == nil || !strings.Contains(out+err.Error(), "xtables lock") {
		t.Errorf("iptables-legacy in the agent's Pod while the node's xtables lock is held: %v\n%s", err, out)
	}
}

// startRegistry serves an image registry (go-containerregistry's, in this
// process) on one loopback port in the host's namespace and in each
// node's, for as long as the test runs, and returns its host:port: the
// nodes' containerd pulls from a loopback registry over plain HTTP.
func startRegistry(t *testing.T, l *lab.Lab) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := host.Addr().String()
	listeners := []net.Listener{host}
	for _, n := range l.Nodes() {
		var ln net.Listener
		if err := netns.Run(filepath.Join("/run/netns", n.NetNS), func() error {
			var err error
			ln, err = net.Listen("tcp", addr)
			return err
		}); err != nil {
			t.Fatalf("registry in %s: %v", n.Name, err)
		}
		listeners = append(listeners, ln)
	}
	for _, ln := range listeners {
		srv := &http.Server{Handler: reg, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	return addr
}

// checkMetricsWithPromtool runs promtool check metrics on a scrape.
func checkMetricsWithPromtool(t *testing.T, bin, scrape string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// promProc is a Prometheus the test started in a node's namespace.
type promProc struct{ agentProc }

// startPrometheus runs Prometheus in node's namespace with the shipped
// configuration for a Prometheus without Kubernetes service discovery
// (deploy/prometheus/prometheus.yml) and rules, as docs/cluster.md says:
// the agents listed as the command there lists them (nodes, by name),
// scraped every second, the rules' for: durations cut to 5 s (promtool
// test rules checks the real ones).
func startPrometheus(t *testing.T, l *lab.Lab, bin, node string, nodes []string) *promProc {
	t.Helper()
	ns, err := l.NetNS(node)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shipped := filepath.Join(repoRoot(t), "deploy", "prometheus")
	rules, err := os.ReadFile(filepath.Join(shipped, "svctrace-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	short := regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAll(rules, []byte("$1 5s"))
	if err := os.WriteFile(filepath.Join(dir, "svctrace-rules.yml"), short, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(shipped, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = regexp.MustCompile(`(?m)^(  (scrape|evaluation)_interval:) \S+$`).ReplaceAll(cfg, []byte("$1 1s"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// The agents' list, written by the command prometheus.yml gives.
	tmpl := regexp.MustCompile(`(?m)^#\s+kubectl get nodes -o go-template='(.*)' > svctrace-agents.yml$`).FindSubmatch(cfg)
	if tmpl == nil {
		t.Fatal("deploy/prometheus/prometheus.yml gives no command that lists the agents")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := l.Kubectl(ctx, "get", "nodes", "-o", "go-template="+string(tmpl[1]))
	if err != nil {
		t.Fatalf("the command of prometheus.yml: %v\n%s", err, list)
	}
	for _, n := range nodes {
		if !strings.Contains(list, fmt.Sprintf(`["%s:9859"], labels: {node: %s}}`, l.Node(n).IP, n)) {
			t.Fatalf("the command of prometheus.yml lists:\n%s", list)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "svctrace-agents.yml"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, logPath := startProcess(t, ns, "prometheus", 15*time.Second, false, filepath.Join(bin, "prometheus"),
		"--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:9090")
	return &promProc{agentProc{client: netnsClient(ns), addr: "127.0.0.1:9090", log: logPath, cmd: cmd}}
}

// promAlert is an alert of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts are Prometheus's active alerts (pending or firing).
func (p *promProc) alerts(t *testing.T) []promAlert {
	t.Helper()
	code, body := p.get(t, "/api/v1/alerts")
	if code != 200 {
		t.Fatalf("/api/v1/alerts: %d %s", code, body)
	}
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/api/v1/alerts: %v: %s", err, body)
	}
	return r.Data.Alerts
}

// waitAlert waits until alert name is in state, and returns those alerts.
func (p *promProc) waitAlert(t *testing.T, name, state string, timeout time.Duration) []promAlert {
	t.Helper()
	var last []promAlert
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		last = p.alerts(t)
		var out []promAlert
		for _, a := range last {
			if a.Labels["alertname"] == name && a.State == state {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	t.Fatalf("%s not %s within %v; alerts: %+v", name, state, timeout, last)
	return nil
}

// waitNoAlerts waits until no alert is active.
func (p *promProc) waitNoAlerts(t *testing.T, timeout time.Duration) {
	t.Helper()
	var last []promAlert
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		if last = p.alerts(t); len(last) == 0 {
			return
		}
	}
	t.Fatalf("alerts still active after %v: %+v", timeout, last)
}

// waitQuery waits until an instant query gives one sample of value want.
func (p *promProc) waitQuery(t *testing.T, query, want string, timeout time.Duration) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		var code int
		code, body = p.get(t, "/api/v1/query?query="+url.QueryEscape(query))
		var r struct {
			Data struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if code == 200 && json.Unmarshal([]byte(body), &r) == nil && len(r.Data.Result) == 1 &&
			len(r.Data.Result[0].Value) == 2 && r.Data.Result[0].Value[1] == want {
			return
		}
	}
	t.Fatalf("%s is not %s within %v: %s", query, want, timeout, body)
}

// lineWith is the first line of a screen that holds text, or "".
func lineWith(screen, text string) string {
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, text) {
			return line
		}
	}
	return ""
}

// deleteWebRule deletes, in node's nat table, the rule of default/web:http
// that sends to its first endpoint.
func deleteWebRule(t *testing.T, l *lab.Lab, node string) {
	t.Helper()
	nat, err := l.Exec(node, "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	// The burst scaled the Deployment: its Pods may be others now.
	cur, err := l.WaitEndpoints("default", "web", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ep := strings.Split(cur[0], ":")[0]
	m := regexp.MustCompile(`(?m)^-A (KUBE-SVC-\S+) (.*--comment "default/web:http -> ` + regexp.QuoteMeta(ep) + `:8080".*)$`).FindStringSubmatch(nat)
	if m == nil {
		t.Fatalf("no rule of default/web:http to %s in:\n%s", ep, nat)
	}
	if _, err := l.Exec(node, "sh", "-c", "iptables -t nat -D "+m[1]+" "+m[2]); err != nil {
		t.Fatal(err)
	}
}
