package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/reconcile"
)

// TestReconcileRulesCapture renders kube-proxy's rules from a real
// kube-proxy v1.36.3 capture's objects: nothing to change on the capture,
// and on the capture less one rule, exactly that rule back.
func TestReconcileRulesCapture(t *testing.T) {
	out, stderr, code := run(t, "reconcile", "rules", "--snapshot", importSnapshot(t, ""), "--kube-proxy-version", "v1.36.3")
	if code != exitOK || !strings.Contains(out, "IPv4 (nf_tables backend): 0 changes") {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	broken := importSnapshot(t, "../../examples/node1-nginx-rule-deleted.iptables-save.txt")
	out, stderr, code = run(t, "reconcile", "rules", "--snapshot", broken, "--kube-proxy-version", "v1.36.3", "-o", "json")
	if code != exitDrift {
		t.Fatalf("exit %d, want %d:\n%s%s", code, exitDrift, out, stderr)
	}
	var p reconcile.RulesPlan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "RulesPlan" || len(p.Families) != 1 || len(p.Families[0].Changes) != 1 {
		t.Fatalf("plan: %s", out)
	}
	c := p.Families[0].Changes[0]
	want := `-A KUBE-SVC-P4Q3KNUAWJVP4ILH -m comment --comment "default/nginx:http -> 10.244.0.5:8080" -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-DFWPZSRRP22P56ON`
	if c.Op != "rewrite" || c.Object != "KUBE-SVC-P4Q3KNUAWJVP4ILH" || !strings.Contains(strings.Join(c.Add, "\n"), want) || len(c.Fixes) != 1 {
		t.Errorf("change: %+v", c)
	}
	if !strings.HasPrefix(p.Families[0].Payload, "*nat\n:KUBE-SVC-P4Q3KNUAWJVP4ILH - [0:0]\n") {
		t.Errorf("payload:\n%s", p.Families[0].Payload)
	}
	// Narrowed to another Service, nothing to change.
	if out, stderr, code := run(t, "reconcile", "rules", "--snapshot", broken, "--kube-proxy-version", "v1.36.3", "--service", "shop/cart"); code != exitOK {
		t.Errorf("--service shop/cart: exit %d:\n%s%s", code, out, stderr)
	}
	if out, _, code := run(t, "reconcile", "rules", "--snapshot", broken, "--kube-proxy-version", "v1.36.3", "--service", "default/nginx"); code != exitDrift || !strings.Contains(out, "KUBE-SVC-P4Q3KNUAWJVP4ILH") {
		t.Errorf("--service default/nginx: exit %d:\n%s", code, out)
	}
}

// TestReconcileRulesErrors: what cannot be rendered is an error naming
// why, never an empty plan.
func TestReconcileRulesErrors(t *testing.T) {
	snap := importSnapshot(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-proxy-version", "v1.36.3", "--service", "default/ngnix"}, "did you mean default/nginx"},
		{[]string{"--node", "node3"}, `node "node3" is not in the snapshot`},
		{[]string{"--kube-proxy-version", "v1.29.4"}, "svctrace renders the iptables layout of v1.30 to v1.37"},
		{nil, "kube-proxy's version is unknown"},
		{[]string{"--apply"}, "--apply changes a node's kernel: not with --snapshot"},
		{[]string{"--kube-proxy-version", "v1.36.3", "--iptables-backend", "nft"}, "want nf_tables or legacy"},
	} {
		args := append([]string{"reconcile", "rules", "--snapshot", snap}, c.args...)
		_, stderr, code := run(t, args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, exitError, c.want, stderr)
		}
	}
	ipvsSnap := "../../examples/lab-ipvs-v1.36.3.snapshot.yaml"
	_, stderr, code := run(t, "reconcile", "rules", "--snapshot", ipvsSnap, "--kube-proxy-version", "v1.29.1")
	if code != exitError || !strings.Contains(stderr, "svctrace renders the ipvs layout of v1.30 to v1.37") {
		t.Errorf("ipvs snapshot, v1.29: exit %d:\n%s", code, stderr)
	}
	// v1.33.0 to v1.33.5 hook nftables mode's filter chains otherwise than the v1.33.6 svctrace renders.
	nftSnap := "../../examples/lab-nftables-v1.33.13.snapshot.yaml"
	_, stderr, code = run(t, "reconcile", "rules", "--snapshot", nftSnap, "--node", "node1", "--kube-proxy-version", "v1.33.4")
	if code != exitError || !strings.Contains(stderr, "v1.33.6 and later patch releases") {
		t.Errorf("nftables snapshot, v1.33.4: exit %d:\n%s", code, stderr)
	}
	// Without the ipsets, a plan in ipvs mode would be a guess.
	data, err := os.ReadFile(ipvsSnap)
	if err != nil {
		t.Fatal(err)
	}
	noSets := filepath.Join(t.TempDir(), "no-ipsets.yaml")
	text := strings.Replace(string(data), "  - collector: ipset\n", "  - collector: ipset-not-read\n", 1)
	if err := os.WriteFile(noSets, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(t, "reconcile", "rules", "--snapshot", noSets)
	if code != exitError || !strings.Contains(stderr, "compares the IPVS table, the ipsets, the addresses on kube-ipvs0 and the iptables rules together") {
		t.Errorf("ipvs snapshot without ipsets: exit %d:\n%s", code, stderr)
	}
}

// TestReconcileRulesIPVS: the ipvs render equals what kube-proxy v1.36.3
// programmed on the lab's VM node: its IPVS table, ipsets, kube-ipvs0's
// addresses and iptables rules.
func TestReconcileRulesIPVS(t *testing.T) {
	out, stderr, code := run(t, "reconcile", "rules", "--snapshot", "../../examples/lab-ipvs-v1.36.3.snapshot.yaml", "--node", "vm1")
	if code != exitOK || !strings.Contains(out, "kube-proxy ipvs mode, layout of v1.36.3") || !strings.Contains(out, "IPv4 (legacy backend): 0 changes") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr)
	}
}

// TestReconcileRulesNFTables: the nftables render equals what kube-proxy
// v1.33.13 and v1.36.3 wrote in the lab, and an apply is refused there
// until svctrace writes that mode.
func TestReconcileRulesNFTables(t *testing.T) {
	for _, v := range []string{"v1.33.13", "v1.36.3"} {
		snap := "../../examples/lab-nftables-" + v + ".snapshot.yaml"
		for _, node := range []string{"node1", "node2"} {
			out, stderr, code := run(t, "reconcile", "rules", "--snapshot", snap, "--node", node)
			if code != exitOK || !strings.Contains(out, "kube-proxy nftables mode, layout of "+v) || !strings.Contains(out, "IPv4: 0 changes") {
				t.Errorf("%s %s: exit %d:\n%s%s", v, node, code, out, stderr)
			}
		}
	}
}

// TestAgentRulesPlanRefused: an apply the agent refused before writing
// reads as refused, never as a dry run to repeat with --apply.
func TestAgentRulesPlanRefused(t *testing.T) {
	plan := `{"node":"node1","mode":"iptables","families":[{"family":"IPv4","changes":[{"op":"add","table":"nat","object":"KUBE-SVC-X"}]}]}`
	for _, c := range []struct {
		code int
		want string
	}{{exitError, "apply refused: nothing written"}, {exitOK, "dry run: nothing written"}} {
		p, err := agentRulesPlan(plan, c.code)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		renderRulesPlan(&b, p, false)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("exit %d:\n%s\nwant %q", c.code, b.String(), c.want)
		}
	}
	if _, err := agentRulesPlan("not json", exitError); err == nil {
		t.Error("an answer that is no plan was read")
	}
}
