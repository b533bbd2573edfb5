package main

import (
	"strings"
	"testing"
)

// objectsRefusal is the start of what --apply with --objects says.
const objectsRefusal = "--apply renders kube-proxy's rules from the live API objects only"

// A repair renders only from the live API: objects from a file, which
// nothing validated, are refused with --apply, before anything is read
// or written, on the node and through its agent alike.
func TestReconcileRulesApplyRefusesObjects(t *testing.T) {
	for _, args := range [][]string{
		{"--local", "--node", "node1", "--apply"},
		{"--node", "node1", "--apply"},
		{"--local", "--node", "node1", "--apply", "--force"},
	} {
		// A backend no write takes: should the refusal go, the command
		// still stops before it reads or writes this namespace's kernel.
		args = append([]string{"reconcile", "rules", "--objects", fixture + "objects.yaml", "--kube-proxy-version", "v1.36.3", "--iptables-backend", "none"}, args...)
		out, stderr, code := run(t, args...)
		if code != exitError || !strings.Contains(stderr, objectsRefusal) || !strings.Contains(stderr, "--objects FILE") {
			t.Errorf("%q: exit %d:\n%s%s", args, code, out, stderr)
		}
	}
}

// A dry run may still read the objects from a file: it writes nothing.
func TestReconcileRulesDryRunTakesObjects(t *testing.T) {
	requireRoot(t)
	requireTools(t, "ip", "iptables-nft-restore", "ip6tables-nft")
	ns := netns(t)
	bin := buildBinary(t)
	restoreNode1(t, ns, "iptables-nft-restore")
	// The fixture is IPv4 only: a chain of kube-proxy's tells the IPv6
	// family's mode.
	if out, code := inNetns(t, ns, "", "ip6tables-nft", "-t", "nat", "-N", "KUBE-SERVICES"); code != 0 {
		t.Fatalf("ip6tables-nft: %s", out)
	}
	out, code := inNetns(t, ns, "", bin, "reconcile", "rules", "--local", "--node", "node1", "--objects", fixture+"objects.yaml",
		"--kube-proxy-version", "v1.36.3", "--kube-proxy-metrics-address", "127.0.0.1:1")
	if code == exitError || strings.Contains(out, objectsRefusal) || !strings.Contains(out, "dry run: nothing written") {
		t.Fatalf("dry run with --objects: exit %d:\n%s", code, out)
	}
}
