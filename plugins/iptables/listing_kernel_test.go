//go:build linux

package iptables

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestListingAsSave loads a real kube-proxy's nat table into a namespace
// of the test's, lists it as users do (iptables -t nat -L with -n -v,
// with -n --line-numbers, and bare), and checks that each listing reads
// to the rules iptables-save gives of the same kernel state: every chain,
// every rule's matches, target and options, and its interfaces where the
// listing shows them (-v). It fails under CI=true, and skips elsewhere,
// without root or iptables.
func TestListingAsSave(t *testing.T) {
	ns := netnstest.New(t, "lst", "iptables", "iptables-save", "iptables-restore")
	raw, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	tables := []string{"nat", "filter"}
	var load string
	for _, table := range tables {
		load += tableSection(t, string(raw), table)
	}
	names := regexp.MustCompile(`--nfacct-name +([a-z_]+)`).FindAllStringSubmatch(load, -1)
	var objs []string
	for _, m := range names {
		if !slices.Contains(objs, m[1]) {
			objs = append(objs, m[1])
		}
	}
	netnstest.Nfacct(t, ns, objs...)
	netnstest.Run(t, ns, load, "iptables-restore")
	for _, table := range tables {
		listTable(t, ns, table)
	}
}

// listTable compares the listings of a table with its iptables-save.
func listTable(t *testing.T, ns, table string) {
	save := netnstest.Run(t, ns, "", "iptables-save", "-t", table)
	want, err := ParseString("save", save, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-L", "-n", "-v"},
		{"-L", "-n", "--line-numbers"},
		{"-L"},
		{"-L", "-n", "-v", "-x", "--line-numbers"},
	} {
		t.Run(table+" "+strings.Join(args, " "), func(t *testing.T) {
			text := netnstest.Run(t, ns, "", append([]string{"iptables", "-t", table}, args...)...)
			got, err := ParseString("listing", text, ParseOptions{})
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			verbose := strings.Contains(strings.Join(args, " "), "-v")
			sameListedRules(t, table, got, want, verbose)
			if got.Excerpt != "" {
				t.Errorf("a whole table's listing read as an excerpt: %s", got.Excerpt)
			}
		})
	}
}

// tableSection is a table of a dump, from its *table line to its COMMIT.
func tableSection(t *testing.T, dump, table string) string {
	i := strings.Index(dump, "*"+table+"\n")
	if i < 0 {
		t.Fatalf("no *%s table in the dump", table)
	}
	j := strings.Index(dump[i:], "COMMIT\n")
	return dump[i : i+j+len("COMMIT\n")]
}

// sameListedRules compares a table of two rulesets chain by chain and
// rule by rule.
func sameListedRules(t *testing.T, table string, got, want *Ruleset, ifaces bool) {
	t.Helper()
	g, w := got.Tables[table], want.Tables[table]
	if g == nil || w == nil {
		t.Fatalf("%s table: got %v, want %v", table, got.TableOrder, want.TableOrder)
	}
	for _, name := range w.ChainOrder {
		gc, wc := g.Chain(name), w.Chain(name)
		if gc == nil {
			t.Errorf("chain %s not read", name)
			continue
		}
		if strings.Trim(gc.Policy, "-") != strings.Trim(wc.Policy, "-") {
			t.Errorf("chain %s: policy %q, want %q", name, gc.Policy, wc.Policy)
		}
		gr, wr := gc.Rules(), wc.Rules()
		if len(gr) != len(wr) {
			t.Errorf("chain %s: %d rules, want %d", name, len(gr), len(wr))
			continue
		}
		for i := range wr {
			if gs, ws := ruleKey(gr[i], ifaces), ruleKey(wr[i], ifaces); gs != ws {
				t.Errorf("chain %s rule %d:\n got %s (%s)\nwant %s (%s)", name, i+1, gs, gr[i].Raw, ws, wr[i].Raw)
			}
		}
	}
	if len(g.ChainOrder) != len(w.ChainOrder) {
		t.Errorf("chains %v, want %v", g.ChainOrder, w.ChainOrder)
	}
}

// ruleKey is what a walk reads of a rule, in one line.
func ruleKey(r *Rule, ifaces bool) string {
	var b strings.Builder
	if r.Source != nil {
		fmt.Fprintf(&b, "src %v %v; ", r.Source.Negate, r.Source.Prefix)
	}
	if r.Dest != nil {
		fmt.Fprintf(&b, "dst %v %v; ", r.Dest.Negate, r.Dest.Prefix)
	}
	if ifaces && r.InIface != nil {
		fmt.Fprintf(&b, "in %v; ", *r.InIface)
	}
	if ifaces && r.OutIface != nil {
		fmt.Fprintf(&b, "out %v; ", *r.OutIface)
	}
	if r.Protocol != nil {
		fmt.Fprintf(&b, "proto %v; ", *r.Protocol)
	}
	if r.Fragment != nil {
		fmt.Fprintf(&b, "frag %v; ", *r.Fragment)
	}
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "-m %s %v; ", m.Module, m.Options)
	}
	fmt.Fprintf(&b, "target %s goto %v %v; unknown %q", r.Target, r.Goto, r.TargetOptions, r.Unknown)
	return b.String()
}

// printoutRules have a rule for each printout the reader knows, in the
// forms iptables -L prints with and without -n.
const printoutRules = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:T - [0:0]
:KUBE-X - [0:0]
-A T -p tcp -m tcp --dport 80 -j RETURN
-A T -p tcp -m tcp ! --dport 80 -j RETURN
-A T -p tcp -m tcp --sport 1000:2000 --dport 30000:30010 -j RETURN
-A T -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -j RETURN
-A T -p tcp -m multiport --dports 80,443 -j RETURN
-A T -p tcp -m multiport ! --dports 80,443:445 -j RETURN
-A T -p udp -m multiport --sports 53 -j RETURN
-A T -m statistic --mode random --probability 0.33333333349 -j RETURN
-A T -m statistic --mode nth --every 3 --packet 1 -j RETURN
-A T -m mark --mark 0x4000/0x4000 -j RETURN
-A T -m mark ! --mark 0x4000/0x4000 -j RETURN
-A T -m mark --mark 0x4000 -j RETURN
-A T -j MARK --set-xmark 0x4000/0x4000
-A T -j MARK --and-mark 0xffffbfff
-A T -j MARK --xor-mark 0x4000
-A T -j MARK --set-mark 0x4000
-A T -j MARK --set-xmark 0x4000/0xc000
-A T -m addrtype --dst-type LOCAL -j RETURN
-A T -m addrtype ! --dst-type LOCAL --limit-iface-in -j RETURN
-A T -m addrtype --src-type LOCAL -j RETURN
-A T -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-X --mask 255.255.255.255 --rsource -j RETURN
-A T -m recent --set --name KUBE-SEP-X --mask 255.255.255.255 --rsource -j RETURN
-A T -p tcp -m tcp -j DNAT --to-destination 10.244.1.2:80
-A T -p tcp -m tcp -j DNAT --to-destination 10.244.1.2:80 --random --persistent
-A T -p udp -m udp --dport 53 -j DNAT --to-destination 10.244.1.2
-A T -m conntrack --ctstate NEW -j RETURN
-A T -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j RETURN
-A T -m conntrack --ctstate INVALID --ctorigdstport 80 -j RETURN
-A T -m state --state RELATED,ESTABLISHED -j RETURN
-A T -m comment --comment "a \"quoted\" comment */ x" -j RETURN
-A T -j MASQUERADE --random-fully
-A T -p tcp -j MASQUERADE --to-ports 1024-65535
-A T -j SNAT --to-source 1.2.3.4
-A T -p tcp -j REDIRECT --to-ports 8080
-A T -s 10.0.0.0/8 ! -d 10.1.2.3/32 -i eth0 ! -o docker0 -j RETURN
-A T -s 127.0.0.1/32 -d 224.0.0.0/4 -i veth+ -j RETURN
-A T -f -j RETURN
-A T ! -f -j RETURN
-A T ! -p tcp -j RETURN
-A T -p sctp -m sctp --dport 80 -j RETURN
-A T -p icmp -m icmp --icmp-type 8 -j RETURN
-A T -m physdev --physdev-is-in -j RETURN
-A T -m limit --limit 3/min --limit-burst 5 -j RETURN
-A T -m limit --limit 10/sec --limit-burst 20 -j RETURN
-A T -j LOG --log-prefix "x: "
-A T -j LOG --log-level 6 --log-prefix "y z"
-A T -m socket -j RETURN
-A T -g KUBE-X
-A T
-A T -p gre -j RETURN
-A T -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A T -m set ! --match-set KUBE-CLUSTER-IP src -j RETURN
-A T -d 10.96.0.1/32 -p tcp -m comment --comment "ns/svc:p cluster IP" -m tcp --dport 443 -j RETURN
COMMIT
`

// TestListingPrintouts reads back the listings of printoutRules (see
// TestListingAsSave).
func TestListingPrintouts(t *testing.T) {
	ns := netnstest.New(t, "lst", "iptables", "iptables-save", "iptables-restore", "ipset")
	netnstest.Run(t, ns, "", "ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port")
	netnstest.Run(t, ns, printoutRules, "iptables-restore")
	listTable(t, ns, "nat")
}
