package iptables

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// TestDumpOfTheOtherFamily gives a dump as the other family's, as a user
// who passes ip6tables-save output to --iptables-save does: the read fails
// naming the file and the first line that shows it, never reads on and
// reports every Service missing.
func TestDumpOfTheOtherFamily(t *testing.T) {
	const v6dir = "testdata/ipv6/"
	for _, c := range []struct {
		name, file, collector, family string
		want                          []string
	}{
		{"ip6tables-save given as IPv4", v6dir + "node1.ip6tables-save.txt", CollectorSave, "IPv4",
			[]string{v6dir + "node1.ip6tables-save.txt:1:1: ", "the header names ip6tables-save: an IPv6 dump, given as IPv4; give it as the IPv6 dump"}},
		// Only the header says IPv6: the shape of a single-stack node's
		// ip6tables dump, which read as IPv4 lacked every Service.
		{"ip6tables-save without addresses given as IPv4", v6dir + "node1-no-addresses.ip6tables-save.txt", CollectorSave, "IPv4",
			[]string{"node1-no-addresses.ip6tables-save.txt:1:1: ", "an IPv6 dump, given as IPv4"}},
		{"iptables-save given as IPv6", ptNode1, CollectorSave6, "IPv6",
			[]string{ptNode1 + ":1:1: ", "the header names iptables-save: an IPv4 dump, given as IPv6; give it as the IPv4 dump"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := &snapshot.NodeState{Name: "node1", Dumps: []snapshot.Dump{{
				Collector: c.collector, Family: c.family, Origin: c.file, Text: string(ptRead(t, c.file)),
			}}}
			for _, load := range []struct {
				name string
				f    func(*snapshot.NodeState, string) (any, error)
			}{
				{"Load", func(ns *snapshot.NodeState, f string) (any, error) { return Loader{}.Load(ns, f) }},
				{"LoadNarrow", func(ns *snapshot.NodeState, f string) (any, error) { return Loader{}.LoadNarrow(ns, f) }},
				{"IndexDump", func(ns *snapshot.NodeState, _ string) (any, error) { return Loader{}.IndexDump(ns, &ns.Dumps[0]) }},
			} {
				_, err := load.f(ns, c.family)
				if err == nil {
					t.Fatalf("%s: no error", load.name)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q, want it to contain %q", load.name, err, w)
					}
				}
			}
		})
	}
}

// TestAddressOfTheOtherFamily: a headerless dump given as one family whose
// rules hold an address of the other names the line and the address.
func TestAddressOfTheOtherFamily(t *testing.T) {
	text := strings.Join([]string{
		"*nat",
		":KUBE-SERVICES - [0:0]",
		`-A KUBE-SERVICES -d fd00:10:96::1/128 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -j ACCEPT`,
		"COMMIT", ""}, "\n")
	_, err := ParseString("rules.txt", text, ParseOptions{Family: "IPv4"})
	want := "rules.txt:3:21: an IPv6 address (fd00:10:96::1) in a dump given as IPv4: was it taken with ip6tables-save? give it as the IPv6 dump"
	if err == nil || err.Error() != want {
		t.Errorf("error %v,\nwant %s", err, want)
	}
	_, err = ParseString("rules.txt", strings.Replace(text, "fd00:10:96::1/128", "10.96.0.1/32", 1), ParseOptions{Family: "IPv6"})
	if err == nil || !strings.Contains(err.Error(), "rules.txt:3:21: an IPv4 address (10.96.0.1) in a dump given as IPv6: was it taken with iptables-save?") {
		t.Errorf("error %v", err)
	}
}
