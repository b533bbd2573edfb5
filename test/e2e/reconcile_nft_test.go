//go:build linux

package e2e

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestReconcileNFTables repairs kube-proxy's nftables table on a node with
// kube-proxy stopped, in the v1.36 and the v1.33 layout: drift is empty
// and real traffic lands where it should after the write, kube-proxy's
// first full sync leaves the table as svctrace wrote it, a stop in the
// middle of a write leaves the old table or the new one, rollback puts the
// old one back, and another component's table is untouched byte for
// byte.
func TestReconcileNFTables(t *testing.T) {
	for _, v := range []string{"", "v1.33.13"} {
		name := v
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) { reconcileNFTables(t, v) })
	}
}

func reconcileNFTables(t *testing.T, version string) {
	c := startMatrix(t, "nftables", version)
	waitDrift(t, c, "node1", nil)
	edit(t, c, "nft add table inet cni-test",
		"nft 'add chain inet cni-test forward { type filter hook forward priority 0 ; }'",
		"nft add rule inet cni-test forward ip saddr 10.244.0.0/16 ip daddr 10.244.0.0/16 counter accept")
	foreign := nftList(t, c, "inet cni-test")
	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	web := clusterIP(t, c, "web")
	edit(t, c, "nft delete element ip kube-proxy service-ips '{ "+web+" . tcp . 80 }'",
		"nft add chain ip kube-proxy service-AAAAAAAA-default/gone/tcp/http")
	c.Apply(t, `apiVersion: v1
kind: Service
metadata: {name: added, namespace: default}
spec:
  selector: {app: nothing}
  ports: [{name: http, port: 80, protocol: TCP}]
`)
	out, code := c.svctrace(t, "node1", "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", c.version)
	t.Logf("dry run:\n%s", out)
	if code != 1 {
		t.Fatalf("dry run: exit %d, want 1", code)
	}
	for _, want := range []string{"delete ip kube-proxy service-AAAAAAAA-default/gone/tcp/http", "edit ip kube-proxy service-ips  (default/web:http)",
		"comment \"default/added:http\" : goto reject-chain", "fixes MissingFrontend default/web:http"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not show %q", want)
		}
	}
	backup := filepath.Join(t.TempDir(), "first.yaml")
	out, code = c.svctrace(t, "node1", "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", c.version, "--apply", "--backup", backup)
	t.Logf("apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "read again: no drift") {
		t.Fatalf("apply: exit %d", code)
	}
	waitDrift(t, c, "node1", nil)
	repaired := nftList(t, c, "ip kube-proxy")
	t.Run("traffic", func(t *testing.T) { checkTraffic(t, c) })

	t.Run("kube-proxy's first sync", func(t *testing.T) {
		if err := c.startProxy("node1"); err != nil {
			t.Fatal(err)
		}
		if got := nftList(t, c, "ip kube-proxy"); got != repaired {
			t.Errorf("kube-proxy's first full sync changed the repaired table:\n%s", netnstest.LineDiff(repaired, got))
		}
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stopped mid-apply", func(t *testing.T) {
		edit(t, c, "nft delete element ip kube-proxy service-ips '{ "+web+" . tcp . 80 }'")
		stoppedMidApply(t, c, func() string { return nftList(t, c, "ip kube-proxy") }, repaired)
	})
	if got := nftList(t, c, "inet cni-test"); got != foreign {
		t.Errorf("another component's table changed:\n%s", netnstest.LineDiff(foreign, got))
	}
}

var nftElements = regexp.MustCompile(`(?s)elements = \{([^}]*)\}`)

// nftList is `nft list table` of node1, normalised for what kube-proxy
// does not keep: the order of the table's chains, sets and maps, and of
// each set's elements, counters, and the clients affinity sets pin.
func nftList(t *testing.T, c *cluster, table string) string {
	t.Helper()
	out, err := c.Exec("node1", "sh", "-c", "nft list table "+table)
	if err != nil {
		t.Fatalf("nft list table %s: %v\n%s", table, err, out)
	}
	out = regexp.MustCompile(`counter packets \d+ bytes \d+`).ReplaceAllString(out, "counter")
	out = nftElements.ReplaceAllStringFunc(out, func(block string) string {
		inner := nftElements.FindStringSubmatch(block)[1]
		var items []string
		for _, it := range strings.Split(inner, ",") {
			// An affinity set's elements are the clients the packet
			// path pins, each with its time left.
			if it = strings.Join(strings.Fields(it), " "); it != "" && !strings.Contains(it, " expires ") {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			// As nft lists a set without elements: no line.
			return ""
		}
		slices.Sort(items)
		return "elements = { " + strings.Join(items, ", ") + " }"
	})
	// nft lists a table's chains, sets and maps in the order they were
	// made, which a restart of kube-proxy changes: sort them.
	var blocks []string
	var cur []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\t\t") && strings.HasSuffix(l, "{"):
			cur = []string{l}
		case l == "\t}":
			blocks = append(blocks, strings.Join(append(cur, l), "\n"))
			cur = nil
		case cur != nil:
			cur = append(cur, l)
		default:
			blocks = append(blocks, l)
		}
	}
	slices.Sort(blocks)
	return strings.Join(blocks, "\n")
}
