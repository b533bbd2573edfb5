package iptables

import (
	"os"
	"strings"
	"testing"
)

// TestNoLocalDropsProven: wild dump 43 shows a Local policy's KUBE-EXT
// chain whole, without its jump to KUBE-SVL, in a stretch of
// iptables-save that is no grep of the Service: the drop is assumed. The
// same chain in a grep of the Service's name (which leaves the
// uncommented jump out) proves nothing, and nothing is assumed.
func TestNoLocalDropsProven(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/wild/43-kind-1.26-ext-local-no-endpoint.iptables-save")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseString("43", string(raw), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tails := extTails(rs)
	drop, ok := tails["filter/KUBE-EXTERNAL-SERVICES"]
	if !ok || len(drop.chain.Rules()) != 1 || !strings.Contains(drop.chain.Rules()[0].Raw, `--comment "default/nodeport-service has no local endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 31964 -j DROP`) {
		t.Fatalf("no assumed drop for NodePort 31964: %+v", tails)
	}

	var grep []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, "nodeport-service") {
			grep = append(grep, l)
		}
	}
	rs, err = ParseString("grep", strings.Join(grep, "\n")+"\n", ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := extTails(rs)["filter/KUBE-EXTERNAL-SERVICES"]; ok {
		t.Error("a grep of the Service's name is taken as proof it has no local endpoints")
	}
}
