package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplainAllNodesSnapshot explains a Service on every node of a
// snapshot: one report per node, a List of them in JSON.
func TestExplainAllNodesSnapshot(t *testing.T) {
	const snap = "../../examples/lab-iptables-v1.36.3.snapshot.yaml"
	out, errOut, code := run(t, "explain", "default/web", "--snapshot", snap, "--all-nodes")
	if code != 0 || !strings.Contains(out, "Service default/web on node node1 (iptables mode)") ||
		!strings.Contains(out, "Service default/web on node node2 (iptables mode)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, "explain", "default/web", "--snapshot", snap, "--all-nodes", "-o", "json")
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind string `json:"kind"`
			Node string `json:"node"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Kind != "ExplainReport" {
		t.Errorf("%+v", list)
	}
}

// TestAllNodesFlags: --all-nodes excludes --node and --local, and a
// workstation read needs a node.
func TestAllNodesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "default/web", "--all-nodes", "--node", "node1"}, "--all-nodes and --node exclude each other"},
		{[]string{"drift", "--all-nodes", "--local"}, "--local reads only the node it runs on"},
		{[]string{"drift", "--all-nodes", "--max-concurrent", "0"}, "--max-concurrent 0"},
		{[]string{"explain", "default/web"}, "no node given: --node NAME reads that node through its svctrace agent"},
		{[]string{"drift", "--node", "n1", "--helper-pod", "--local"}, "--helper-pod reads a node from a workstation"},
		{[]string{"collect", "--all-nodes", "--iptables-save", "x", "-f", "y"}, "--all-nodes reads every node through its agent"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
