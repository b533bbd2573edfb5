package iptables

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listingOf is a listing of one chain with columns for the form.
func listingOf(columns, chain string, rules ...string) string {
	return chain + "\n" + columns + "\n" + strings.Join(rules, "\n") + "\n"
}

const (
	colsNV = " pkts bytes target     prot opt in     out     source               destination"
	colsN  = "target     prot opt source               destination"
	colsNL = "num  target     prot opt source               destination"
	colsVL = "num   pkts bytes target     prot opt in     out     source               destination"
)

// TestListingRules: rule lines of real listings (the wild dumps) and of
// each printout iptables writes, translated to the iptables-save line.
func TestListingRules(t *testing.T) {
	cases := []struct{ cols, line, want string }{
		// 05: -n -v, comment, interfaces, negated addresses.
		{colsNV, `    0     0 KUBE-SERVICES  all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* kubernetes service portals */`,
			`-A C -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`},
		{colsNV, `    1    60 DOCKER     all  --  *      *       0.0.0.0/0           !127.0.0.0/8          ADDRTYPE match dst-type LOCAL`,
			`-A C ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER`},
		{colsNV, `    0     0 MASQUERADE  all  --  *      !docker0  172.17.0.0/16        0.0.0.0/0           `,
			`-A C -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE`},
		{colsNV, `    0     0 RETURN     all  --  docker0 *       0.0.0.0/0            0.0.0.0/0           `,
			`-A C -i docker0 -j RETURN`},
		{colsNV, `    0     0 MARK       all  --  *      *       0.0.0.0/0            0.0.0.0/0            MARK or 0x4000`,
			`-A C -j MARK --set-xmark 0x4000/0x4000`},
		{colsNV, `    0     0 KUBE-MARK-MASQ  tcp  --  *      *      !10.244.0.0/16        10.96.0.10           /* kube-system/kube-dns:dns-tcp cluster IP */ tcp dpt:53`,
			`-A C ! -s 10.244.0.0/16 -d 10.96.0.10 -p tcp -m comment --comment "kube-system/kube-dns:dns-tcp cluster IP" -m tcp --dport 53 -j KUBE-MARK-MASQ`},
		{colsNV, `    0     0 DNAT       udp  --  *      *       0.0.0.0/0            0.0.0.0/0            /* kube-system/kube-dns:dns */ udp to:10.244.0.24:53`,
			`-A C -p udp -m comment --comment "kube-system/kube-dns:dns" -m udp -j DNAT --to-destination 10.244.0.24:53`},
		{colsNV, `    0     0 MASQUERADE  all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* kubernetes service traffic requiring SNAT */ mark match 0x4000/0x4000`,
			`-A C -m comment --comment "kubernetes service traffic requiring SNAT" -m mark --mark 0x4000/0x4000 -j MASQUERADE`},
		// 14: counters with suffixes, random-fully, negated mark.
		{colsNV, ` 471K   28M KUBE-SERVICES  all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* kubernetes service portals */`,
			`-A C -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`},
		{colsNV, ` 7476  459K RETURN     all  --  *      *       0.0.0.0/0            0.0.0.0/0            mark match ! 0x4000/0x4000`,
			`-A C -m mark ! --mark 0x4000/0x4000 -j RETURN`},
		{colsNV, `    0     0 MASQUERADE  all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* x */ random-fully`,
			`-A C -m comment --comment "x" -j MASQUERADE --random-fully`},
		// 09: names without -n, statistic.
		{colsN, `KUBE-SEP-SF3LG62VAE5ALYDV  all  --  anywhere             anywhere             /* kube-system/kube-dns:dns-tcp -> 10.244.0.4:53 */ statistic mode random probability 0.50000000000`,
			`-A C -m comment --comment "kube-system/kube-dns:dns-tcp -> 10.244.0.4:53" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-SF3LG62VAE5ALYDV`},
		{colsN, `MASQUERADE  all  --  10.244.0.0/16       !base-address.mcast.net/4  /* flanneld masq */ random-fully`,
			`-A C -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully`},
		{colsN, `MARK       all  --  anywhere             anywhere             MARK xor 0x4000`,
			`-A C -j MARK --set-xmark 0x4000/0x0`},
		// 30: port names and REJECT.
		{colsN, `REJECT     tcp  --  anywhere             10.43.4.68           /* mariadb/mariadb-slave:mysql has no endpoints */ tcp dpt:mysql reject-with icmp-port-unreachable`,
			`-A C -d 10.43.4.68 -p tcp -m comment --comment "mariadb/mariadb-slave:mysql has no endpoints" -m tcp --dport 3306 -j REJECT --reject-with icmp-port-unreachable`},
		{colsN, `ACCEPT     all  --  anywhere             anywhere             /* kubernetes forwarding conntrack pod source rule */ ctstate RELATED,ESTABLISHED`,
			`-A C -m comment --comment "kubernetes forwarding conntrack pod source rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`},
		// 24: line numbers, protocol numbers (iptables 1.8.9+).
		{colsVL, `1        0     0 KUBE-MARK-MASQ  6    --  *      *      !10.131.0.0/16        100.67.0.10          /* kube-system/kube-dns:metrics cluster IP */ tcp dpt:9153`,
			`-A C ! -s 10.131.0.0/16 -d 100.67.0.10 -p tcp -m comment --comment "kube-system/kube-dns:metrics cluster IP" -m tcp --dport 9153 -j KUBE-MARK-MASQ`},
		// 38: -v without -n.
		{colsNV, `    0     0 KUBE-SEP-NCDBIYVKEUM6V7JV  all  --  any    any     anywhere             anywhere             /* kube-system/kube-dns:dns */`,
			`-A C -m comment --comment "kube-system/kube-dns:dns" -j KUBE-SEP-NCDBIYVKEUM6V7JV`},
		// 10: negated conntrack, nfacct.
		{colsN, `DROP       all  -- !localhost/8          localhost/8          /* block incoming localnet connections */ ! ctstate RELATED,ESTABLISHED,DNAT`,
			`-A C ! -s 127.0.0.1/8 -d 127.0.0.1/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`},
		{colsN, `DROP       all  --  anywhere             anywhere             ctstate INVALID nfacct-name  ct_state_invalid_dropped_pkts`,
			`-A C -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP`},
		// Session affinity (libxt_recent), ipvs mode (libxt_set), multiport.
		{colsN, `KUBE-SEP-X  all  --  0.0.0.0/0            0.0.0.0/0            recent: CHECK seconds: 10800 reap name: KUBE-SEP-X side: source mask: 255.255.255.255`,
			`-A C -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-X --mask 255.255.255.255 --rsource -j KUBE-SEP-X`},
		{colsN, `ACCEPT     all  --  0.0.0.0/0            0.0.0.0/0            match-set KUBE-CLUSTER-IP dst,dst`,
			`-A C -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT`},
		{colsN, `ACCEPT     tcp  --  0.0.0.0/0            0.0.0.0/0            multiport dports  !80,443:445`,
			`-A C -p tcp -m multiport ! --dports 80,443:445 -j ACCEPT`},
		{colsN, `ACCEPT     all  --  0.0.0.0/0            0.0.0.0/0            PHYSDEV match --physdev-is-in`,
			`-A C -m physdev --physdev-is-in -j ACCEPT`},
		{colsN, `           all  --  0.0.0.0/0            0.0.0.0/0           `, `-A C`},
		{colsN, `C          all  -f  0.0.0.0/0            0.0.0.0/0           [goto] `, `-A C -f -g C`},
		{colsN, `ACCEPT     all  --  0.0.0.0/0            0.0.0.0/0            /* made by iptables -L */`,
			`-A C -m comment --comment "made by iptables -L" -j ACCEPT`},
	}
	for _, c := range cases {
		text := listingOf(c.cols, "Chain C (1 references)", c.line)
		l := &listing{src: "t"}
		got, err := l.translate(text)
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if lines := strings.Split(got, "\n"); len(lines) < 3 || lines[2] != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.line, lines[min(2, len(lines)-1)], c.want)
		}
	}
}

// TestListingWild reads every listing of the wild corpus, guesses its
// table, and notes what the form does not show.
func TestListingWild(t *testing.T) {
	want := map[string]struct {
		table string
		notes []string
	}{
		"05": {"nat", []string{"iptables -L -n -v output"}},
		"06": {"filter", nil},
		"09": {"nat", []string{"without -v", "without -n", `the source "k8s-cp/24" is a name`, `"base-address.mcast.net" read as 224.0.0.0`,
			"line 38: kube-proxy writes this rule with -m mark ! --mark 0x4000/0x4000, which the listing does not show",
			"so the rule on line 19, which shows no match, may have lost one too"}},
		"10": {"filter", []string{"without -v", "line 37: kube-proxy writes this rule with -m mark --mark 0x4000/0x4000"}},
		"13": {"nat", nil},
		"14": {"nat", nil},
		"15": {"filter", nil},
		"24": {"nat", []string{"lines 1-4 are rules of a chain whose Chain line is above"}},
		"30": {"filter", []string{`the port name "mysql" read as 3306`}},
		"32": {"nat", []string{"line 1 are rules"}},
		"38": {"nat", []string{"without -n"}},
		"50": {"nat", []string{"lines 1-4 are rules of a chain whose Chain line is above the listing's start: read as the end of KUBE-SERVICES (line 1 sends a cluster IP to its Service chain"}},
	}
	paths, _ := filepath.Glob("../../testdata/wild/*.iptables-L*")
	if len(paths) < len(want) {
		t.Fatalf("%d listings in the corpus", len(paths))
	}
	for _, p := range paths {
		w, ok := want[filepath.Base(p)[:2]]
		if !ok {
			w.table = "" // a listing added since: read, with the notes of every listing
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ParseString(filepath.Base(p), string(raw), ParseOptions{})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(rs.Tables) != 1 || (w.table != "" && rs.Tables[w.table] == nil) {
			t.Errorf("%s: tables %v, want %s", p, rs.TableOrder, w.table)
		}
		if w.table == "" {
			w.table = rs.TableOrder[0]
		}
		var all strings.Builder
		for _, n := range rs.Notes {
			all.WriteString(n.String() + "\n")
		}
		for _, s := range append(w.notes, "read as the "+w.table+" table", "for a complete answer give iptables-save output") {
			if !strings.Contains(all.String(), s) {
				t.Errorf("%s: no note with %q in\n%s", p, s, all.String())
			}
		}
	}
}

// TestListingErrors: a line that is no listing line is an error naming
// the source, line and column, with a hint that is true.
func TestListingErrors(t *testing.T) {
	for _, c := range []struct{ text, msg string }{
		{listingOf(colsNV, "Chain C (1 references)", "    0     0 RETURN"), "expected a protocol"},
		{listingOf(colsNV, "Chain C (1 references)", "this is not a rule"), "expected the packet count (-v)"},
		{listingOf(colsN, "Chain C (1 references)", "RETURN all -- 0.0.0.0/0"), "expected the destination"},
		{listingOf(colsN, "Chain C (1 references)") + listingOf(colsN, "Chain C (1 references)"), "chain C is listed twice"},
		{"$ iptables -t nat -L\n" + listingOf(colsN, "Chain C (1 references)") + "$ iptables -t filter -L\n", "lists the filter table"},
		{"KUBE-SVC-X  tcp  --  0.0.0.0/0            10.0.0.1             /* a/b:c cluster IP */ tcp dpt:80\n", "rule lines with no Chain line (a grep of a listing?)"},
		{"    0     0 KUBE-SVC-X  tcp  --  *      *       0.0.0.0/0            10.0.0.1\n", "rule lines with no Chain line"},
	} {
		_, err := ParseString("paste.txt", c.text, ParseOptions{})
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want a *ParseError", c.text, err)
			continue
		}
		if pe.Source != "paste.txt" || pe.Line < 1 || pe.Column < 1 || !strings.Contains(pe.Msg, c.msg) ||
			!strings.Contains(pe.Msg, "give iptables-save output") {
			t.Errorf("%q: %+v, want %q at a line and column, with the hint", c.text, pe, c.msg)
		}
	}
}

// TestListingKeepsUnread: a printout not understood is kept on its rule,
// which a walk then takes as not matching, and a note names its line.
func TestListingKeepsUnread(t *testing.T) {
	text := listingOf(colsN, "Chain INPUT (policy ACCEPT)",
		"ACCEPT     tcp  --  0.0.0.0/0            0.0.0.0/0            tcp dpt:22 owner UID match 0",
		"ACCEPT     tcp  --  0.0.0.0/0            0.0.0.0/0            state",
		"DROP       all  --  somehost             0.0.0.0/0")
	rs, err := ParseString("x", text, ParseOptions{Table: "filter"})
	if err != nil {
		t.Fatal(err)
	}
	rules := rs.Chain("filter", "INPUT").Rules()
	if len(rules) != 3 || len(rules[0].Unknown) == 0 || len(rules[2].Unknown) == 0 {
		t.Fatalf("rules %v: want both kept, with what was not understood", rules)
	}
	var all string
	for _, n := range rs.Notes {
		all += n.String() + "\n"
	}
	if got := rules[0].Raw; got != `-A INPUT -p tcp -m tcp --dport 22 -m listing-unread --text "owner UID match 0" -j ACCEPT` {
		t.Errorf("rule %s", got)
	}
	if got := rules[1].Raw; got != `-A INPUT -p tcp -m listing-unread --text "state" -j ACCEPT` {
		t.Errorf("rule %s", got)
	}
	for _, s := range []string{`line 3: "owner UID match 0" is not understood`, `line 5: the source "somehost" is a name`, "read as the filter table (the table given)"} {
		if !strings.Contains(all, s) {
			t.Errorf("no note %q in\n%s", s, all)
		}
	}
}

// TestListingTable: the table from the command pasted with the listing,
// else guessed once from all chains.
func TestListingTable(t *testing.T) {
	for _, c := range []struct{ text, table string }{
		{"root@node:~# iptables -t nat -L KUBE-SEP-X -n\n" + listingOf(colsN, "Chain C (1 references)", "RETURN     all  --  0.0.0.0/0            0.0.0.0/0") + "root@node:~#\n", "nat"},
		{"$ sudo iptables -nvL\n" + listingOf(colsNV, "Chain C (1 references)"), "filter"},
		{listingOf(colsN, "Chain KUBE-SVC-X (1 references)", "KUBE-SEP-Y  all  --  0.0.0.0/0            0.0.0.0/0") +
			listingOf(colsN, "Chain KUBE-SERVICES (2 references)", "REJECT     tcp  --  0.0.0.0/0            10.0.0.1             tcp dpt:80 reject-with icmp-port-unreachable",
				"KUBE-SVC-X  tcp  --  0.0.0.0/0            10.0.0.2             tcp dpt:80"), "nat"},
		{listingOf(colsN, "Chain KUBE-SERVICES (2 references)", "REJECT     tcp  --  0.0.0.0/0            10.0.0.1             tcp dpt:80 reject-with icmp-port-unreachable"), "filter"},
	} {
		rs, err := ParseString("x", c.text, ParseOptions{})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if rs.Tables[c.table] == nil || len(rs.Tables) != 1 {
			t.Errorf("%q: tables %v, want %s", c.text, rs.TableOrder, c.table)
		}
	}
}

// FuzzListing: no input that starts like a listing panics its reader.
func FuzzListing(f *testing.F) {
	paths, _ := filepath.Glob("../../testdata/wild/*.iptables-L*")
	for _, p := range paths {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(string(raw))
		}
	}
	f.Add(listingOf(colsNV, "Chain C (1 references)", "    0     0 RETURN  tcp -- * * 0.0.0.0/0 0.0.0.0/0 tcp dpt:!x recent: ! SET MARK xset 0x mark match ! /* x"))
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseString("fuzz", s, ParseOptions{})
	})
}

// TestListingIPv6: ip6tables -L, whose comment may follow a match and
// whose any-address ::/0 tells the family.
func TestListingIPv6(t *testing.T) {
	text := listingOf(colsNV, "Chain T6 (0 references)",
		"    0     0 DNAT       6    --  *      *       ::/0                 fd00::1              tcp dpt:80 /* x y */ to:[fd00::2]:8080",
		"    0     0 MASQUERADE  0    --  *      *       ::/0                 ::/0                ")
	rs, err := ParseString("x", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Family != famIPv6 {
		t.Errorf("family %s, want IPv6", rs.Family)
	}
	r := rs.Chain("nat", "T6").Rules()[0]
	if want := `-A T6 -d fd00::1 -p tcp -m tcp --dport 80 -m comment --comment "x y" -j DNAT --to-destination [fd00::2]:8080`; r.Raw != want {
		t.Errorf("got %s\nwant %s", r.Raw, want)
	}
}

// TestListingCut: a whole table's listing whose rules jump to a chain it
// does not list was cut, and is read as an excerpt.
func TestListingCut(t *testing.T) {
	text := listingOf(colsN, "Chain PREROUTING (policy ACCEPT)", "KUBE-SERVICES  all  --  0.0.0.0/0            0.0.0.0/0") + "\n" +
		listingOf(colsN, "Chain INPUT (policy ACCEPT)") + "\n" + listingOf(colsN, "Chain OUTPUT (policy ACCEPT)") + "\n" +
		listingOf(colsN, "Chain POSTROUTING (policy ACCEPT)") + "\n" +
		listingOf(colsN, "Chain KUBE-SERVICES (2 references)", "KUBE-SVC-X  tcp  --  0.0.0.0/0            10.0.0.1             tcp dpt:80")
	rs, err := ParseString("x", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs.Excerpt, "jump to chains it does not list (KUBE-SVC-X)") {
		t.Errorf("excerpt %q", rs.Excerpt)
	}
	if rs, _ := ParseString("x", strings.Replace(text, "KUBE-SVC-X ", "DNAT       ", 1), ParseOptions{}); rs == nil || rs.Excerpt != "" {
		t.Errorf("a whole table read as an excerpt: %v", rs)
	}
}
