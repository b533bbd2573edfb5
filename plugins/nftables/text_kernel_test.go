//go:build linux

package nftables

import (
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// TestTextKernel: rulesets loaded into a namespace read the same from the
// kernel's `nft list ruleset` as from its `nft -j list ruleset`: the real
// captures, the forms the netlink reader is tested on, forms of kube-proxy
// the captures lack, and kube-proxy's table beside iptables-nft's.
func TestTextKernel(t *testing.T) {
	cases := kernelCases(t)
	forms, err := os.ReadFile("testdata/text-forms.nft")
	if err != nil {
		t.Fatal(err)
	}
	cases["text forms"] = kernelCase{text: string(forms), load: []string{"nft", "-f", "-"}}
	for name, kc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := kernelNetns(t)
			inNetns(t, ns, kc.text, kc.load...)
			iptablesOnly := name == "kube-proxy iptables-nft"
			if iptablesOnly {
				// Checked below alone; then read beside kube-proxy's table.
				checkIPTablesRefused(t, inNetns(t, ns, "", "nft", "list", "ruleset"))
				inNetns(t, ns, cases["kube-proxy v1.36.3"].text, "nft", "-f", "-")
			}
			// Without handles (as users paste it) and with them (nft -a),
			// which the walk's hops name.
			for _, list := range [][]string{{"nft", "list", "ruleset"}, {"nft", "-a", "list", "ruleset"}} {
				text := inNetns(t, ns, "", list...)
				js := inNetns(t, ns, "", "nft", "-j", "list", "ruleset")
				fromText, err := Parse("nft list ruleset", []byte(text))
				if err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(list, " "), err, text)
				}
				fromJSON, err := Parse("nft -j list ruleset", []byte(js))
				if err != nil {
					t.Fatal(err)
				}
				if iptablesOnly {
					// nft prints iptables' extensions translated (xt
					// conntrack as ct state) in its text and as xt in
					// its JSON: kube-proxy's table is compared.
					fromText.Tables = slices.DeleteFunc(fromText.Tables, func(t *Table) bool { return t.Name != "kube-proxy" })
					fromJSON.Tables = slices.DeleteFunc(fromJSON.Tables, func(t *Table) bool { return t.Name != "kube-proxy" })
					sameRuleset(t, name, fromText, fromJSON)
					continue
				}
				sameRuleset(t, name, fromText, fromJSON)
				if len(fromText.Notes) != len(fromJSON.Notes) {
					t.Errorf("notes differ:\ntext: %v\njson: %v", fromText.Notes, fromJSON.Notes)
				}
				if list[1] != "-a" {
					continue
				}
				for _, fam := range []string{"IPv4", "IPv6"} {
					in := dataplane.ObserveInput{Node: "node2", Family: fam, NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}}
					g, w := dataplane.Observe(NewPlane(fromText, fam), in), dataplane.Observe(NewPlane(fromJSON, fam), in)
					if !reflect.DeepEqual(g, w) {
						t.Errorf("%s: observed behaviour differs:\ntext: %+v\njson: %+v", fam, g, w)
					}
				}
			}
		})
	}
}

func checkIPTablesRefused(t *testing.T, text string) {
	t.Helper()
	_, err := Parse("nft list ruleset", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "these are iptables rules (iptables-nft backend) printed by nft; run `iptables-save` (and `ip6tables-save`) on the node and give that") {
		t.Errorf("iptables-nft's tables alone: got %v, want the iptables-save hint", err)
	}
}
