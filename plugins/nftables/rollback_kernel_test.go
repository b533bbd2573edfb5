//go:build linux

package nftables

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// inKernel runs fn in the namespace (netlink reads and nft runs there).
func inKernel(t *testing.T, ns string, fn func() error) error {
	t.Helper()
	return netns.Run(filepath.Join("/run/netns", ns), fn)
}

var (
	handleRe  = regexp.MustCompile(` # handle \d+`)
	counterRe = regexp.MustCompile(`counter packets \d+ bytes \d+`)
	expiresRe = regexp.MustCompile(` expires [0-9hms.]+`)
)

// listTable is `nft list table FAMILY kube-proxy` normalised: counters
// and expiry times cleared, each set's elements sorted and the table's
// chains, sets and maps sorted (nft lists elements in an order of its
// own, and objects in the order they were made); "" when there is no
// such table.
func listTable(t *testing.T, ns, family string) string {
	t.Helper()
	tables := inNetns(t, ns, "", "nft", "list", "tables")
	if !strings.Contains(tables, "table "+family+" "+KubeProxyTable+"\n") {
		return ""
	}
	text := inNetns(t, ns, "", "nft", "list", "table", family, KubeProxyTable)
	text = counterRe.ReplaceAllString(expiresRe.ReplaceAllString(handleRe.ReplaceAllString(text, ""), ""), "counter")
	var out []string
	var elems []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(l, "elements = { "); ok {
			in, l = true, rest
		}
		if !in {
			out = append(out, line)
			continue
		}
		end := strings.HasSuffix(l, " }")
		for _, e := range strings.Split(strings.TrimSuffix(l, " }"), ",") {
			if e = strings.TrimSpace(e); e != "" {
				elems = append(elems, e)
			}
		}
		if end {
			slices.Sort(elems)
			out = append(out, "\t\telements = { "+strings.Join(elems, ", ")+" }")
			in, elems = false, nil
		}
	}
	// Each chain, set or map starts at a line indented once.
	var head, blocks []string
	for _, line := range out {
		switch {
		case line == "" || line == "}":
		case strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "\t\t") && line != "\t}" && !strings.HasPrefix(line, "\tcomment "):
			blocks = append(blocks, line)
		case len(blocks) == 0:
			head = append(head, line)
		default:
			blocks[len(blocks)-1] += "\n" + line
		}
	}
	slices.Sort(blocks)
	return strings.Join(append(head, blocks...), "\n")
}

func backupIn(t *testing.T, ns, family string) dataplane.BackupPart {
	t.Helper()
	var part dataplane.BackupPart
	if err := inKernel(t, ns, func() (err error) {
		part, err = Loader{}.Backup(context.Background(), &dataplane.RepairPlan{Family: family})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return part
}

func restoreIn(t *testing.T, ns string, part dataplane.BackupPart) error {
	t.Helper()
	return inKernel(t, ns, func() error {
		_, err := Loader{}.Restore(context.Background(), part)
		return err
	})
}

// loadKubeProxy loads kube-proxy v1.36.3's tables (ip and ip6) into the
// namespace, with a client pinned in one affinity set.
func loadKubeProxy(t *testing.T, ns string) {
	t.Helper()
	b, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.txt")
	if err != nil {
		t.Fatal(err)
	}
	inNetns(t, ns, string(b), "nft", "-f", "-")
	inNetns(t, ns, "", "nft", "add element ip kube-proxy "+affinitySet+" { 192.0.2.1 }")
}

const affinitySet = "affinity-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080"

// TestRestoreExact: a backup put back gives `nft list table` as it was,
// whatever a write did to the table since: elements removed and added,
// a chain and a set made, chains flushed, and an affinity set removed
// with the client it pinned; the other family's table is left as it is.
func TestRestoreExact(t *testing.T) {
	ns := kernelNetns(t)
	loadKubeProxy(t, ns)
	before := listTable(t, ns, "ip")
	if !strings.Contains(before, "elements = { 192.0.2.1 }") {
		t.Fatalf("the affinity set pins no client:\n%s", before)
	}
	part := backupIn(t, ns, "IPv4")
	inNetns(t, ns, "", "nft", "-f", "-", strings.Join([]string{
		"delete element ip kube-proxy cluster-ips { 10.96.0.1 }",
		"add element ip kube-proxy cluster-ips { 10.96.0.99 }",
		"add chain ip kube-proxy extra",
		"add set ip kube-proxy extra-set { type ipv4_addr ; }",
		"flush chain ip kube-proxy endpoint-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080",
		"flush chain ip kube-proxy service-242WI43H-shop/cart/tcp/http",
		"delete set ip kube-proxy " + affinitySet,
		"add element ip6 kube-proxy cluster-ips { fd00::99 }",
	}, "\n")+"\n")
	other := listTable(t, ns, "ip6")
	if err := restoreIn(t, ns, part); err != nil {
		t.Fatal(err)
	}
	if after := listTable(t, ns, "ip"); after != before {
		t.Errorf("after the rollback, nft list table ip kube-proxy differs:\n%s", netnstest.LineDiff(before, after))
	}
	if after := listTable(t, ns, "ip6"); after != other {
		t.Errorf("the rollback of IPv4 changed the ip6 table:\n%s", netnstest.LineDiff(other, after))
	}
}

// kubeProxyLayout is kube-proxy v1.36.3's table of the family, as a
// render would be.
func kubeProxyLayout(t *testing.T, family string) *Layout {
	t.Helper()
	b, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.json")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Parse("node2.nft.json", b)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := ReadLayout(rs, family)
	if !ok {
		t.Fatalf("no %s table", family)
	}
	return l
}

func writeIn(t *testing.T, ns string, target *Layout) error {
	t.Helper()
	return inKernel(t, ns, func() error {
		_, err := writeLayout(context.Background(), "IPv4", target, "", nil)
		return err
	})
}

// TestRestoreRemovesCreatedTable: a backup taken where kube-proxy's table
// of the family did not exist, put back after a write that created it,
// removes the table (no empty table is left), and leaves another table.
func TestRestoreRemovesCreatedTable(t *testing.T) {
	ns := kernelNetns(t)
	inNetns(t, ns, "", "nft", "add table ip6 kube-proxy")
	part := backupIn(t, ns, "IPv4")
	if err := writeIn(t, ns, kubeProxyLayout(t, "IPv4")); err != nil {
		t.Fatal(err)
	}
	if listTable(t, ns, "ip") == "" {
		t.Fatal("the write made no table")
	}
	if err := restoreIn(t, ns, part); err != nil {
		t.Fatal(err)
	}
	if out := inNetns(t, ns, "", "nft", "list", "tables"); out != "table ip6 kube-proxy\n" {
		t.Errorf("after the rollback, the tables are:\n%s", out)
	}
	// Put back again, there is nothing to do.
	if err := restoreIn(t, ns, part); err != nil {
		t.Errorf("a second rollback: %v", err)
	}
}

// TestFailedWriteLeavesNothing: a write nft refuses part of is one
// transaction, and leaves nothing behind, not even kube-proxy's table.
func TestFailedWriteLeavesNothing(t *testing.T) {
	ns := kernelNetns(t)
	target := kubeProxyLayout(t, "IPv4")
	// A chain the rule jumps to that the write does not make: nft
	// refuses the rule, after the table, sets and other chains.
	target.Chains["services"].Rules = append(target.Chains["services"].Rules, "jump no-such-chain")
	err := writeIn(t, ns, target)
	if err == nil || !strings.Contains(err.Error(), "nft -f") {
		t.Fatalf("error %v, want nft's refusal", err)
	}
	if out := inNetns(t, ns, "", "nft", "list", "ruleset"); strings.TrimSpace(out) != "" {
		t.Errorf("a failed write left:\n%s", out)
	}
}

// TestRollbackAfterReadBack: a write that commits but does not read back
// as its render (nft lists a rule otherwise than it was written) is an
// error, and its backup put back gives the table exactly as it was.
func TestRollbackAfterReadBack(t *testing.T) {
	ns := kernelNetns(t)
	loadKubeProxy(t, ns)
	before := listTable(t, ns, "ip")
	part := backupIn(t, ns, "IPv4")
	target := kubeProxyLayout(t, "IPv4")
	delete(target.Sets, affinitySet)
	delete(target.Chains, "endpoint-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080")
	target.Chains["service-242WI43H-shop/cart/tcp/http"].Rules = []string{"meta l4proto tcp tcp dport 8080 counter accept"}
	err := writeIn(t, ns, target)
	if err == nil || !strings.Contains(err.Error(), "read back") {
		t.Fatalf("error %v, want a read-back failure", err)
	}
	if listTable(t, ns, "ip") == before {
		t.Fatal("the write changed nothing")
	}
	if err := restoreIn(t, ns, part); err != nil {
		t.Fatal(err)
	}
	if after := listTable(t, ns, "ip"); after != before {
		t.Errorf("after the rollback, nft list table ip kube-proxy differs:\n%s", netnstest.LineDiff(before, after))
	}
}
