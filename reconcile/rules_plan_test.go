package reconcile

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// TestPlanBundledSnapshots renders kube-proxy's layout from the API objects
// of snapshots a real kube-proxy v1.36.3 programmed, and holds it to what
// that kube-proxy wrote: on every node and family, nothing to change.
func TestPlanBundledSnapshots(t *testing.T) {
	for _, f := range []string{"../examples/lab-iptables-v1.36.3.snapshot.yaml", "../examples/lab-ipvs-v1.36.3.snapshot.yaml"} {
		t.Run(f, func(t *testing.T) { planBundled(t, f) })
	}
}

func planBundled(t *testing.T, file string) {
	s, err := snapshot.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		p, err := PlanRules(s, RulesOptions{Node: n.Name})
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		for _, f := range p.Families {
			for _, c := range f.Changes {
				t.Errorf("%s %s %s: %s %s %s\n add: %q\n remove: %q", n.Name, f.Family, f.Backend, c.Op, c.Table, c.Object, c.Add, c.Remove)
			}
		}
		if len(p.Families) != 2 {
			t.Errorf("%s: planned %d families, want 2", n.Name, len(p.Families))
		}
		t.Logf("%s: version %s (%s), notes %q", n.Name, p.KubeProxyVersion, p.VersionSource, p.Notes)
	}
}

func TestPlanSeesEdits(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("node1")
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Family == "IPv4" && d.Backend == "nf_tables" {
			d.Text = strings.Replace(d.Text, "-A KUBE-SEP-7I3TWDWYTP3VQEKZ -p tcp -m comment --comment \"default/web-lb:http\" -m tcp -j DNAT --to-destination 10.244.1.10:8080\n", "", 1)
		}
	}
	p, err := PlanRules(s, RulesOptions{Node: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Families {
		for _, c := range f.Changes {
			t.Logf("%s %s: %s %s %s %s fixes %q", f.Family, f.Backend, c.Op, c.Table, c.Object, c.Service, c.Fixes)
		}
		t.Logf("payload:\n%s", f.Payload)
	}
}

// Every mode a plane renders is written by it; a mode no plane renders
// is refused at the plan.
func TestWriterOfModes(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables", "ipvs"} {
		if _, err := writer(mode); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
	if _, err := repairer("kernelspace"); err == nil || !strings.Contains(err.Error(), "does not render that mode yet") {
		t.Errorf("kernelspace: %v", err)
	}
}
