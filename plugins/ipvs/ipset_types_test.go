package ipvs

import (
	"regexp"
	"strings"
	"testing"
)

// TestIPSetTypeDamaged reads the lab's real ipset dump with the type of
// KUBE-CLUSTER-IP cut short or garbled: the read fails naming the dump
// and the line, where it used to keep the set unmatched and report every
// ClusterIP's member missing.
func TestIPSetTypeDamaged(t *testing.T) {
	create := regexp.MustCompile(`(?m)^create KUBE-CLUSTER-IP hash:ip,port .*$`)
	for _, c := range []struct {
		name, line, want string
	}{
		{"cut inside the type", "create KUBE-CLUSTER-IP hash:ip,po",
			`:47:24: set KUBE-CLUSTER-IP: type "hash:ip,po" is not an ipset type (cut short? it starts hash:ip,port, hash:ip,port,ip, hash:ip,port,net)`},
		{"cut after the colon", "create KUBE-CLUSTER-IP hash:", `:47:24: set KUBE-CLUSTER-IP: type "hash:" is not an ipset type (cut short?`},
		{"a type ipset has not", "create KUBE-CLUSTER-IP hash:ip,prt family inet hashsize 1024",
			`:47:24: set KUBE-CLUSTER-IP: type "hash:ip,prt" is not an ipset type: the dump is damaged, or not ipset's`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := labNode(t)
			edit(t, ns, CollectorIPSet, func(s string) string { return create.ReplaceAllLiteralString(s, c.line) })
			_, err := Loader{}.Load(ns, "IPv4")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "node vm1: ipset dump ipset save"+c.want) {
				t.Errorf("error %q,\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// TestIPSetTypeList: the same in an ipset list dump, at its Type: line.
func TestIPSetTypeList(t *testing.T) {
	_, err := ParseIPSets("Name: KUBE-CLUSTER-IP\nType: hash:ip,\nHeader: family inet\nMembers:\n10.96.0.1,tcp:443\n")
	want := `line 2 col 7: set KUBE-CLUSTER-IP: type "hash:ip," is not an ipset type (cut short? it starts hash:ip,mac, hash:ip,port, hash:ip,port,ip, hash:ip,port,net, hash:ip,mark)`
	if err == nil || err.Error() != want+": the dump is damaged, or not ipset's; capture it again with ipset save" {
		t.Errorf("error %v,\nwant %s…", err, want)
	}
}

// TestIPSetTypeOther: every type ipset has is read; one the reader does
// not match is kept with a note, as another tool's set on the node is.
func TestIPSetTypeOther(t *testing.T) {
	var b strings.Builder
	for i, typ := range ipsetTypes() {
		b.WriteString("create S" + string(rune('A'+i)) + " " + typ + "\n")
	}
	s, err := ParseIPSets(b.String())
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, n := range s.Notes {
		if strings.Contains(n, "not understood") {
			notes = append(notes, n)
		}
	}
	if len(s.Sets) != len(ipsetTypes()) || len(notes) != 6 {
		t.Errorf("%d sets, notes %q; want every type, 6 noted (bitmap:ip,mac hash:mac hash:ip,mac hash:ip,mark hash:net,iface list:set)", len(s.Sets), notes)
	}
	// A type of ipset's words, as a later ipset may add, is noted too.
	s, err = ParseIPSets("create L hash:net,port,mac family inet\nadd L 10.0.0.0/8,tcp:80,00:11:22:33:44:55\n")
	if err != nil || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], `type "hash:net,port,mac" not understood`) {
		t.Errorf("a later type: %v %q", err, s.Notes)
	}
}
