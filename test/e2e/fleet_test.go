//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/tmuxtest"
	"github.com/svctrace/svctrace/test/lab"
)

// TestFleet is drift --all-nodes over a fleet (issue 37): N Nodes with an
// agent Pod each, N real agent APIs (test/fleet) against the lab's real
// API server, and the real CLI binary from the control plane's namespace.
// It checks behaviour, not time: every node's report arrives and is
// listed, the CLI's requests to the API server do not grow with N (one
// LIST of the agent Pods), each agent reviews the CLI's token once, a
// node whose agent hangs is named with the bound that ran out (exit 3),
// and the progress line shows on a terminal and nowhere else.
//
// SVCTRACE_FLEET_NODES sets N (default 30); hack/bench-fleet.sh runs it
// with 1,000 and SVCTRACE_FLEET_REPORT, where the measurements (wall time,
// the API server's own counts, the baselines) are written in Markdown.
func TestFleet(t *testing.T) {
	n := 30
	if s := os.Getenv("SVCTRACE_FLEET_NODES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SVCTRACE_FLEET_NODES=%q: want a positive number", s)
		}
		n = v
	}
	const workers = 16
	l := lab.Start(t, lab.Options{Nodes: 1})
	lab.EnsureBinaries(t, l.K8sVersion, "kubectl")
	bin := os.Getenv("SVCTRACE_FLEET_BIN")
	if bin == "" {
		bin = buildSvctrace(t)
	}
	f := startFleet(t, l, n, workers)
	cli := func(args ...string) cliRun {
		t.Helper()
		return runCLI(t, l, bin, args...)
	}
	res := fleetResult{Nodes: n, Machine: fleetMachine(), Start: time.Now()}

	// The measured run: every node healthy.
	before := apiMetrics(t, l)
	run := cli("drift", "--all-nodes", "-A", "-o", "json")
	res.CLI = apiMetrics(t, l).minus(before)
	res.Wall = run.wall
	rep := checkFleetReport(t, run, f.nodes, 0)
	for _, node := range rep.Nodes {
		res.AgentBytes += node.BytesRead
	}
	if strings.Contains(run.stderr, "reading nodes") {
		t.Errorf("the progress line was written where stderr is no terminal:\n%s", run.stderr)
	}
	load := res.CLI.split()
	if got := res.CLI.Requests["LIST pods"]; got > 2 {
		t.Errorf("the CLI listed Pods %v times for %d nodes: want at most 2 (every Pod, for the objects; the agent Pods, once)", got, n)
	}
	if got := load[byCLI][0]; got > 6 {
		t.Errorf("the CLI sent %v LISTs for %d nodes, want at most 6 whatever the nodes (%v)", got, n, res.CLI.Requests)
	}
	for _, kind := range []string{"POST tokenreviews", "POST subjectaccessreviews"} {
		if got := res.CLI.Requests[kind]; got != float64(n) {
			t.Errorf("%s: %v for %d agents, want one each (the CLI's token reviewed once per agent)", kind, got, n)
		}
	}

	if dir := os.Getenv("SVCTRACE_FLEET_PROFILE_DIR"); dir != "" {
		// A run of its own: a profile costs a little.
		prof := filepath.Join(dir, fmt.Sprintf("drift-all-nodes-%d.pprof", n))
		if p := cli("drift", "--all-nodes", "-A", "-o", "json", "--profile", "cpu", "--profile-output", prof); p.code != 0 {
			t.Errorf("the profiled run: exit %d\n%s", p.code, tail(p.stderr, 20))
		}
		t.Logf("CPU profile of drift --all-nodes in %s", prof)
	}

	// The baselines, in the same run: what listing the nodes and the Pods
	// costs (kubectl), and one request per node through the API server at
	// the CLI's concurrency.
	before = apiMetrics(t, l)
	start := time.Now()
	out, err := l.Kubectl(context.Background(), "get", "nodes,pods", "-A", "-o", "json")
	res.ListWall = time.Since(start)
	res.ListAPI = apiMetrics(t, l).minus(before)
	if err != nil {
		t.Fatalf("kubectl get nodes,pods: %v", err)
	}
	res.ListOut = len(out)
	before = apiMetrics(t, l)
	res.PerNodeWall = perNodeRequests(t, l, f.nodes, 16)
	res.PerNodeAPI = apiMetrics(t, l).minus(before)

	report := formatFleetReport(res)
	fmt.Printf("\n==== fleet benchmark ====\n%s", report)
	if path := os.Getenv("SVCTRACE_FLEET_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}

	// A node whose agent Pod runs and whose API hangs: named with the
	// bound that ran out, the others read, exit 3 (no drift, some nodes
	// unreadable).
	silentNode, silentPod := f.addSilentNode(t, l)
	nodes := append(append([]string{}, f.nodes...), silentNode)
	run = cli("drift", "--all-nodes", "-A", "-o", "json", "--node-timeout", "3s")
	rep = checkFleetReport(t, run, nodes, 3)
	want := fmt.Sprintf("node %s: no answer from its agent Pod svctrace/%s at %s within 3s (--node-timeout): check that this machine reaches %[3]s",
		silentNode, silentPod, f.silent)
	for _, node := range rep.Nodes {
		if node.Name == silentNode && !strings.HasPrefix(node.Error, want) {
			t.Errorf("the hanging agent's node:\n got  %s\n want %s…", node.Error, want)
		}
	}
	// On a terminal, the progress line counts the nodes read (while the
	// hanging one holds the command), and is gone when the command ends.
	// The shell keeps the command's status in a file: the pane's own
	// status is the shell's.
	codeFile := filepath.Join(t.TempDir(), "code")
	pane := tmuxtest.Start(t, fmt.Sprintf("ip netns exec %s %s drift --all-nodes -A --node-timeout 3s --kubeconfig %s >/dev/null; echo $? >%s",
		l.ControlPlaneNetNS(), bin, l.Kubeconfig, codeFile))
	pane.WaitFor(time.Minute, "reading nodes: ", fmt.Sprintf("/%d", n+1))
	pane.Exited()
	if code, err := os.ReadFile(codeFile); err != nil || strings.TrimSpace(string(code)) != "3" {
		t.Errorf("drift --all-nodes on a terminal: exit %q (%v), want 3\n%s", code, err, pane.Screen())
	}
	if s := pane.Screen(); strings.Contains(s, "reading nodes") {
		t.Errorf("the progress line is left on the terminal:\n%s", s)
	}
}

// cliRun is one run of the CLI.
type cliRun struct {
	args           []string
	stdout, stderr string
	code           int
	wall           time.Duration
}

// runCLI runs svctrace in the control plane's namespace as the lab's
// admin, stderr apart (no terminal).
func runCLI(t *testing.T, l *lab.Lab, bin string, args ...string) cliRun {
	t.Helper()
	argv := append([]string{"netns", "exec", l.ControlPlaneNetNS(), bin}, args...)
	cmd := exec.Command("ip", append(argv, "--kubeconfig", l.Kubeconfig)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliRun{args: args, stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// fleetReport is what checkFleetReport reads of drift -o json.
type fleetReport struct {
	Nodes []struct {
		Name      string `json:"name"`
		Mode      string `json:"mode"`
		Frontends int    `json:"frontends"`
		BytesRead int    `json:"bytesRead"`
		Error     string `json:"error"`
	} `json:"nodes"`
	Findings []json.RawMessage `json:"findings"`
}

// checkFleetReport checks that the run exited with code and lists every
// node once, each read (a report, its frontends) but the one whose agent
// hangs when code is 3.
func checkFleetReport(t *testing.T, run cliRun, nodes []string, code int) fleetReport {
	t.Helper()
	var rep fleetReport
	if err := json.Unmarshal([]byte(run.stdout), &rep); err != nil || run.code != code {
		t.Fatalf("%v: exit %d (want %d), %v\n%s\n%s", run.args, run.code, code, err, tail(run.stdout, 40), tail(run.stderr, 40))
	}
	listed := map[string]int{}
	for _, n := range rep.Nodes {
		listed[n.Name]++
		if n.Error != "" {
			if code == 3 && n.Name == "node-silent" {
				continue
			}
			t.Errorf("node %s was not read: %s", n.Name, n.Error)
		} else if n.Mode != "iptables" || n.Frontends == 0 || n.BytesRead == 0 {
			t.Errorf("node %s: mode %q, %d frontends, %d bytes read: not its agent's report", n.Name, n.Mode, n.Frontends, n.BytesRead)
		}
	}
	for _, n := range nodes {
		if listed[n] != 1 {
			t.Errorf("node %s is listed %d times", n, listed[n])
		}
	}
	if len(rep.Nodes) != len(nodes) || len(rep.Findings) != 0 {
		t.Errorf("%d nodes listed, %d findings; want %d nodes, no finding", len(rep.Nodes), len(rep.Findings), len(nodes))
	}
	return rep
}

// perNodeRequests GETs every Node object, concurrency at once: the least
// a fan-out that asks the API server once per node would cost.
func perNodeRequests(t *testing.T, l *lab.Lab, nodes []string, concurrency int) time.Duration {
	t.Helper()
	next := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for n := range next {
				if _, err := l.Request(context.Background(), "GET", "/api/v1/nodes/"+n, "", nil); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range nodes {
		next <- n
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return time.Since(start)
}
