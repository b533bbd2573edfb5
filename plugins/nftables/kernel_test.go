//go:build linux

package nftables

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

// kernelNetns makes a network namespace for the test, removed when it
// ends (it fails under CI=true, and skips elsewhere, without root or the
// tools that load rulesets).
func kernelNetns(t testing.TB) string {
	t.Helper()
	return netnstest.New(t, "nft", "nft", "iptables-nft-restore", "iptables-nft")
}

// inNetns runs argv in the namespace, with stdin, and returns stdout.
func inNetns(t testing.TB, ns, stdin string, argv ...string) string {
	t.Helper()
	return netnstest.Run(t, ns, stdin, argv...)
}

// readKernelIn reads the namespace's ruleset over netlink, with the
// cache when not nil (as the node agent reads).
func readKernelIn(t testing.TB, ns string, cache *ElementCache) (*Ruleset, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadNetlinkCached(int(f.Fd()), cache)
}

// readBoth reads the namespace's ruleset over netlink (got) and parses
// nft -j's (want).
func readBoth(t *testing.T, ns string) (got, want *Ruleset) {
	t.Helper()
	want, err := Parse("nft -j", []byte(inNetns(t, ns, "", "nft", "-j", "list", "ruleset")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err = readKernelIn(t, ns, nil); err != nil {
		t.Fatal(err)
	}
	return got, want
}

// kernelCase is a ruleset to load into a namespace, with the command
// that loads it.
type kernelCase struct {
	text string
	load []string
	// from says where the ruleset came from, for a recording's note.
	from string
}

// kernelCases are rulesets loaded into a namespace and read both ways:
// kube-proxy's own (captured from real kube-proxy: nftables mode, and
// iptables mode on the nf_tables backend, whose rules nft shows with
// iptables' extensions), and hand-written ones for the forms kube-proxy
// does not write.
func kernelCases(t *testing.T) map[string]kernelCase {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	nft := []string{"nft", "-f", "-"}
	// nfacct objects are not in the namespace: their matches go.
	ipt := regexp.MustCompile(` -m nfacct --nfacct-name +[a-z_]+`).ReplaceAllString(
		read("../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt"), "")
	return map[string]kernelCase{
		"kube-proxy v1.36.3": {read("../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.txt"), nft,
			"testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.txt (real kube-proxy, nftables mode), loaded with nft -f"},
		"kube-proxy v1.33.13": {read("../../testdata/kube-proxy-v1.33.13/two-nodes/node2.nft.txt"), nft,
			"testdata/kube-proxy-v1.33.13/two-nodes/node2.nft.txt (real kube-proxy, nftables mode), loaded with nft -f"},
		"kube-proxy iptables-nft": {ipt, []string{"iptables-nft-restore"},
			"testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt (real kube-proxy, iptables mode) less its nfacct matches, loaded with iptables-nft-restore"},
		"forms": {read("testdata/kernel-forms.nft"), nft,
			"plugins/nftables/testdata/kernel-forms.nft (hand-written forms), loaded with nft -f"},
	}
}

// TestReadKernelAsNft: the netlink reader reads every ruleset as the
// parser reads `nft -j list ruleset` of the same kernel state.
func TestReadKernelAsNft(t *testing.T) {
	for name, kc := range kernelCases(t) {
		t.Run(name, func(t *testing.T) {
			ns := kernelNetns(t)
			inNetns(t, ns, kc.text, kc.load...)
			got, want := readBoth(t, ns)
			if os.Getenv("SVCTRACE_RECORD") == "1" {
				recordKernel(t, ns, name, kc.from)
			}
			checkAsNft(t, name, got, want)
		})
	}
}

// checkAsNft checks a ruleset read over netlink (got) against nft -j's
// of the same state (want): the same lines, the same once kept as JSON and
// read back, and the same behaviour observed in both families. name is
// the case's (kernelCases).
func checkAsNft(t *testing.T, name string, got, want *Ruleset) {
	t.Helper()
	sameLines(t, "netlink", "nft -j", canonical(got), canonical(want))
	// Kept in a snapshot as JSON, it reads back the same.
	text, err := RenderJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("rendered", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	sameLines(t, "rendered", "netlink", canonical(back), canonical(got))
	// And the walks find the same, in both families.
	for _, fam := range []string{"IPv4", "IPv6"} {
		in := dataplane.ObserveInput{Node: "node2", Family: fam, NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}}
		g, w := dataplane.Observe(NewPlane(got, fam), in), dataplane.Observe(NewPlane(want, fam), in)
		if fam == "IPv4" && strings.HasPrefix(name, "kube-proxy v") && len(w.Frontends) < 5 {
			t.Errorf("%s: %d frontends observed, want kube-proxy's", fam, len(w.Frontends))
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: observed behaviour differs:\nnetlink: %+v\nnft -j:  %+v", fam, g, w)
		}
	}
}

// TestReadKernelRefuses: what the reader does not translate is an error
// wrapping ErrNotTranslated, never a guess.
func TestReadKernelRefuses(t *testing.T) {
	ns := kernelNetns(t)
	inNetns(t, ns, "table ip t {\n chain c {\n type filter hook input priority 0; policy accept;\n limit rate 5/second accept\n }\n}\n", "nft", "-f", "-")
	_, err := readKernelIn(t, ns, nil)
	if !errors.Is(err, ErrNotTranslated) {
		t.Fatalf("got %v, want an error wrapping ErrNotTranslated", err)
	}
	if !strings.Contains(err.Error(), "limit") || !strings.Contains(err.Error(), "table ip t chain c") {
		t.Errorf("error %q does not name the expression and the rule", err)
	}
}

// TestReadKernelComments: the comments of tables and chains, which nft's
// JSON leaves out, are read.
func TestReadKernelComments(t *testing.T) {
	ns := kernelNetns(t)
	kc := kernelCases(t)["kube-proxy v1.36.3"]
	inNetns(t, ns, kc.text, kc.load...)
	rs, err := readKernelIn(t, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	kp := rs.Tables[0]
	if kp.ID() != "ip kube-proxy" || kp.Comment != "rules for kube-proxy" {
		t.Errorf("table %s comment %q, want ip kube-proxy, \"rules for kube-proxy\"", kp.ID(), kp.Comment)
	}
	if c := kp.Chain("reject-chain"); c == nil || c.Comment != "helper for @no-endpoint-services / @no-endpoint-nodeports" {
		t.Errorf("reject-chain: %+v", c)
	}
}

// TestReadKernelChanged: a change while the dumps run (a kube-proxy sync)
// makes the reader read again, so that the parts it returns belong to one
// generation of the ruleset; a ruleset that never stops changing is an
// error.
func TestReadKernelChanged(t *testing.T) {
	ns := kernelNetns(t)
	inNetns(t, ns, "table ip t {\n chain c {\n ip daddr 10.0.0.1 drop\n }\n}\n", "nft", "-f", "-")
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	attempts := 0
	rs, err := readNetlink(nfnetlink.NetNS(f.Fd()), nil, func(attempt int) {
		attempts++
		if attempt == 0 {
			inNetns(t, ns, "", "nft", "add", "rule", "ip", "t", "c", "ip", "daddr", "10.0.0.2", "drop")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || len(rs.Tables[0].Chain("c").Rules) != 2 {
		t.Errorf("%d reads, %d rules; want 2 reads and the rule added during the first", attempts, len(rs.Tables[0].Chain("c").Rules))
	}
	_, err = readNetlink(nfnetlink.NetNS(f.Fd()), nil, func(attempt int) {
		inNetns(t, ns, "", "nft", "add", "rule", "ip", "t", "c", "ip", "daddr", fmt.Sprintf("10.0.1.%d", attempt), "drop")
	})
	if err == nil || !strings.Contains(err.Error(), "changed during each") {
		t.Errorf("a ruleset changing during every read: got %v", err)
	}
}

// TestReadKernelTimeouts: an element's own timeout, and the time until it
// expires, read as nft -j shows them (expiry within the seconds between
// the two reads).
func TestReadKernelTimeouts(t *testing.T) {
	ns := kernelNetns(t)
	inNetns(t, ns, "table ip t {\n set s {\n type ipv4_addr\n flags timeout\n timeout 1h\n elements = { 10.0.0.1, 10.0.0.2 timeout 30m }\n }\n}\n", "nft", "-f", "-")
	got, want := readBoth(t, ns)
	g, w := got.Tables[0].Set("s").Elements, want.Tables[0].Set("s").Elements
	if len(g) != 2 || len(w) != 2 {
		t.Fatalf("elements: netlink %v, nft -j %v", g, w)
	}
	for i := range g {
		if g[i].Key.String() != w[i].Key.String() || g[i].Timeout != w[i].Timeout || g[i].Expires < w[i].Expires-2 || g[i].Expires > w[i].Expires {
			t.Errorf("element %d: netlink %s, nft -j %s", i, g[i], w[i])
		}
	}
	if w[1].Timeout != 1800 || w[1].Expires == 0 {
		t.Errorf("nft -j shows %s; want a timeout of 30m and an expiry", w[1])
	}
}
