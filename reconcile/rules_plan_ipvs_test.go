package reconcile

import (
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// TestPlanIPVSEdits takes the ipvs snapshot a real kube-proxy programmed,
// edits its dumps as a node would be edited by hand, and plans: each edit
// comes back as the change that undoes it, with the finding it fixes.
func TestPlanIPVSEdits(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-ipvs-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("vm1")
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		for _, cut := range []string{
			"  -> 10.244.1.11:8080             Masq    1      0          0\n",
			"add KUBE-CLUSTER-IP 10.96.50.17,tcp:80\n",
			"-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n",
			"4: kube-ipvs0    inet 10.96.50.19/32 scope global kube-ipvs0\\       valid_lft forever preferred_lft forever\n",
		} {
			d.Text = strings.Replace(d.Text, cut, "", 1)
		}
		d.Text = strings.Replace(d.Text, "TCP  10.96.50.13:80 rr\n", "TCP  10.96.50.13:80 rr\nTCP  10.96.50.99:80 rr\n  -> 10.1.1.1:80 Masq 1 0 0\n", 1)
	}
	ns.Addresses = slices.DeleteFunc(ns.Addresses, func(a string) bool { return a == "10.96.50.19" })
	p, err := PlanRules(s, RulesOptions{Node: "vm1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range p.Families {
		for _, c := range f.Changes {
			got = append(got, strings.Join([]string{f.Family, c.Op, c.Table, c.Object, c.Service, strings.Join(c.Add, "|"), strings.Join(c.Remove, "|"), strings.Join(c.Fixes, "|")}, " / "))
		}
	}
	rules := "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT"
	for _, want := range []string{
		"IPv4 / edit / ipset / KUBE-CLUSTER-IP / default/ext:http / 10.96.50.17,tcp:80 /  / MissingSetMember default/ext:http ClusterIP 10.96.50.17:80/TCP",
		"IPv4 / edit / ipvs / TCP 10.96.50.10:80 / default/web:http / -> 10.244.1.11:8080 Masq 1 /  / MissingEndpoint default/web:http ClusterIP 10.96.50.10:80/TCP endpoint 10.244.1.11:8080",
		"IPv4 / delete / ipvs / TCP 10.96.50.99:80 /  /  / TCP 10.96.50.99:80 rr|-> 10.1.1.1:80 Masq 1 / ",
		"IPv4 / edit / kube-ipvs0 / addresses / default/dns:dns / 10.96.50.19/32 /  / MissingVIPAddress default/dns:dns ClusterIP 10.96.50.19:53/UDP",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the plan lacks\n %s\nit has:\n %s", want, strings.Join(got, "\n "))
		}
	}
	if n := len(got); n != 5 {
		t.Errorf("%d changes, want 5:\n %s", n, strings.Join(got, "\n "))
	}
	payload := p.Families[0].Payload
	for _, want := range []string{"add KUBE-CLUSTER-IP 10.96.50.17,tcp:80\n", "-a -t 10.96.50.10:80 -r 10.244.1.11:8080 -m -w 1\n",
		"ip addr add 10.96.50.19/32 dev kube-ipvs0\n", "*nat\n:KUBE-SERVICES - [0:0]\n", rules + "\n", "-D -t 10.96.50.99:80\n"} {
		if !strings.Contains(payload, want) {
			t.Errorf("the payload lacks %q:\n%s", want, payload)
		}
	}
}

// Without kube-proxy's configuration, the mode is read off the kernel for
// both families: an IPv6 family with no Service but ipvs mode's chains is
// ipvs mode's (and left alone); families that show two modes are refused,
// not written in either.
func TestPlanIPVSModeOfFamilies(t *testing.T) {
	load := func() (*snapshot.Snapshot, *snapshot.NodeState) {
		s, err := snapshot.Load("../examples/lab-ipvs-v1.36.3.snapshot.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := s.Node("vm1")
		ns.KubeProxy = snapshot.ProxyConfig{}
		return s, ns
	}
	s, _ := load()
	p, err := PlanRules(s, RulesOptions{Node: "vm1", KubeProxyVersion: "v1.36.3"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != "ipvs" || p.Changes() != 0 || len(p.Families) != 2 {
		t.Errorf("mode %s, %d changes, %d families; notes %q", p.Mode, p.Changes(), len(p.Families), p.Notes)
	}

	s, ns := load()
	other, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := other.Node("node1")
	var v6 string
	for _, d := range n1.Dumps {
		if d.Family == "IPv6" && d.Backend == "nf_tables" {
			v6 = d.Text
		}
	}
	for i := range ns.Dumps {
		if ns.Dumps[i].Family == "IPv6" {
			ns.Dumps[i].Text = v6
		}
	}
	_, err = PlanRules(s, RulesOptions{Node: "vm1", KubeProxyVersion: "v1.36.3"})
	if err == nil || !strings.Contains(err.Error(), "show ipvs mode in one IP family and iptables mode in the other") {
		t.Errorf("two modes: %v", err)
	}
}
