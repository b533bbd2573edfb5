package nftables

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// textCanonical renders what a ruleset says, for comparing the text and JSON
// reads of one ruleset: every table, chain (hook, priority, policy), set
// (types, flags, timeout, elements with comments) and rule (statements,
// comment) by value. Left out: handles (the text form prints them only
// with -a), positions (JSON paths or lines), the source, and what nft
// 1.0.6's JSON leaves out where its text shows it: a table's and a chain's
// comment and a set's "dynamic" flag.
func textCanonical(rs *Ruleset) string {
	var b strings.Builder
	for _, t := range rs.Tables {
		fmt.Fprintf(&b, "table %s %s\n", t.Family, t.Name)
		for _, s := range t.Sets {
			fl := slices.DeleteFunc(slices.Clone(s.Flags), func(f string) bool { return f == "dynamic" })
			fmt.Fprintf(&b, " set %s map=%v key=%v data=%v flags=%v timeout=%d size=%d comment=%q\n", s.Name, s.IsMap, s.KeyType, s.DataType, fl, s.Timeout, s.Size, s.Comment)
			for _, el := range s.Elements {
				fmt.Fprintf(&b, "  elem %s\n", dumpValue(reflect.ValueOf(el)))
			}
		}
		for _, c := range t.Chains {
			fmt.Fprintf(&b, " chain %s type=%s hook=%s prio=%d policy=%s\n", c.Name, c.Type, c.Hook, c.Prio, c.Policy)
			for _, r := range c.rules() {
				fmt.Fprintf(&b, "  rule comment=%q %s\n", r.Comment, dumpValue(reflect.ValueOf(r.Stmts)))
			}
		}
		for _, c := range t.Counters {
			fmt.Fprintf(&b, " counter %s %d %d\n", c.Name, c.Packets, c.Bytes)
		}
		for _, o := range t.Objects {
			fmt.Fprintf(&b, " object %s %s\n", o.Kind, o.Name)
		}
	}
	return b.String()
}

// dumpValue prints a value's fields, exported or not, but for handles,
// positions and indexes.
func dumpValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return dumpValue(v.Elem())
	case reflect.Struct:
		var parts []string
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			switch f.Name {
			case "Handle", "Path", "Source", "at":
				continue
			}
			if k := f.Type.Kind(); k == reflect.Map || k == reflect.Func || k == reflect.Chan {
				continue
			}
			parts = append(parts, f.Name+":"+dumpValue(v.Field(i)))
		}
		return v.Type().Name() + "{" + strings.Join(parts, " ") + "}"
	case reflect.Slice, reflect.Array:
		var parts []string
		for i := 0; i < v.Len(); i++ {
			parts = append(parts, dumpValue(v.Index(i)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	case reflect.Bool:
		return fmt.Sprint(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprint(v.Uint())
	}
	return v.Kind().String()
}

// sameRuleset fails t unless the text and JSON reads say the same.
func sameRuleset(t *testing.T, name string, fromText, fromJSON *Ruleset) {
	t.Helper()
	a, b := textCanonical(fromText), textCanonical(fromJSON)
	if a == b {
		return
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		x, y := "", ""
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Fatalf("%s: the text read differs from the JSON read at line %d:\ntext: %s\njson: %s", name, i+1, x, y)
		}
	}
}

func TestTextEqualsJSONFixtures(t *testing.T) {
	for _, dir := range []string{"../../testdata/kube-proxy-v1.36.3/two-nodes/", "../../testdata/kube-proxy-v1.33.13/two-nodes/"} {
		txt, err := os.ReadFile(dir + "node2.nft.txt")
		if err != nil {
			t.Fatal(err)
		}
		js, err := os.ReadFile(dir + "node2.nft.json")
		if err != nil {
			t.Fatal(err)
		}
		a, err := Parse("node2.nft.txt", txt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse("node2.nft.json", js)
		if err != nil {
			t.Fatal(err)
		}
		sameRuleset(t, dir, a, b)
		if len(a.Notes) != len(b.Notes) {
			t.Errorf("%s: notes differ: text %v, json %v", dir, a.Notes, b.Notes)
		}
	}
}

// TestTextIPTablesNFT: iptables-nft's rules printed by nft (the corpus'
// dumps 07 and 22, chains without their table) are refused with the
// command that reads them.
func TestTextIPTablesNFT(t *testing.T) {
	for _, f := range []string{"07-kubeadm-iptables-nft-kube-services.nft", "22-k3s-calico-iptables-nft-via-nft.nft"} {
		data, err := os.ReadFile("../../testdata/wild/" + f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(f, data)
		if err == nil || !strings.Contains(err.Error(), f+": line ") ||
			!strings.Contains(err.Error(), "these are iptables rules (iptables-nft backend) printed by nft; run `iptables-save` (and `ip6tables-save`) on the node and give that") {
			t.Errorf("%s: got %v, want the iptables-save hint with the line", f, err)
		}
	}
}

// TestTextOtherComponents: other components' tables (firewalld's inet
// table, Docker's) are read; what the reader does not understand is kept
// as an unknown statement with a note naming its line, never dropped.
func TestTextOtherComponents(t *testing.T) {
	text := `table inet firewalld { # handle 7
	ct helper helper-ftp-tcp {
		type "ftp" protocol tcp
		l3proto inet
	}

	chain filter_INPUT {
		type filter hook input priority filter + 10; policy accept;
		ct state { established, related } accept
		ct status dnat accept
		iifname "lo" accept
		ct state invalid drop
		icmpv6 type { nd-router-advert, nd-neighbor-solicit } accept
		fib saddr . iif oif missing drop
		meta l4proto { icmp, ipv6-icmp } accept
		tcp flags syn / syn,ack log prefix "x" drop
		jump filter_INPUT_ZONES
		reject with icmpx admin-prohibited
	}

	chain filter_INPUT_ZONES {
		iifname "eth0" goto filter_IN_public
		goto filter_IN_public
	}

	chain filter_IN_public {
		rt type 0 drop comment "not read"
	}
}
table ip docker {
	chain DOCKER-ish {
		type nat hook prerouting priority dstnat; policy accept;
		fib daddr type local counter packets 5 bytes 300 jump docker-chain
		ip saddr 172.17.0.0/16 oifname != "docker0" masquerade
	}
	chain docker-chain {
		iifname != "docker0" tcp dport 8080 dnat to 172.17.0.2:80
	}
}
`
	rs, err := Parse("other.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	notes := fmt.Sprint(rs.Notes)
	for _, want := range []string{"line 16.rule.expr[1]: unknown statement", "line 27.rule.expr[0]: unknown statement \"rt\"", "ct helper"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	fw := rs.Tables[0]
	if fw.Family != "inet" || len(fw.Chains) != 3 || len(fw.Chains[0].Rules) != 10 || fw.Chains[0].Prio != 10 {
		t.Fatalf("firewalld's table read as %+v", fw)
	}
	if got := fw.Chains[0].Rules[9].Text(); got != "reject with icmpx admin-prohibited" {
		t.Errorf("reject read as %q", got)
	}
	if got := rs.Tables[1].Chains[1].Rules[0].Text(); got != `iifname != "docker0" tcp dport 8080 dnat to 172.17.0.2:80` {
		t.Errorf("dnat read as %q", got)
	}
}
