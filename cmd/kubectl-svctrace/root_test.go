package main

import (
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	flag, _, code := run(t, "--version")
	if code != 0 {
		t.Fatalf("--version: exit %d", code)
	}
	cmd, _, _ := run(t, "version")
	if flag != cmd || !strings.HasPrefix(flag, "svctrace ") {
		t.Errorf("--version printed %q, version printed %q: want the same svctrace line", flag, cmd)
	}
}

// The root help names every data plane read and every exit code.
func TestRootHelp(t *testing.T) {
	out, _, code := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{
		"iptables   kube-proxy's iptables mode",
		"nf_tables (iptables-nft) and legacy (iptables-legacy)",
		"nftables   kube-proxy's nftables mode",
		"conntrack  the node's connection tracking table",
		"0  success; for drift: no drift found",
		"1  drift found (drift), stale conntrack entries listed by a\n     \"reconcile conntrack\" dry run",
		"changes listed\n     by a \"reconcile rules\" dry run",
		"2  error: bad input",
		"a Service, port, namespace or node that is not\n     there",
		"--snapshot FILE",
		"completion  ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("root help lacks %q:\n%s", want, out)
		}
	}
}
