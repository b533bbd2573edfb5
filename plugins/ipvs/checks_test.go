package ipvs

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// labNode is the VM node of the lab's ipvs snapshot, as kube-proxy left it.
func labNode(t *testing.T) *snapshot.NodeState {
	t.Helper()
	s, err := snapshot.Load("../../examples/lab-ipvs-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &s.Nodes[0]
}

// edit changes the text of the node's dump of one collector.
func edit(t *testing.T, ns *snapshot.NodeState, collector string, f func(string) string) {
	t.Helper()
	for i := range ns.Dumps {
		if ns.Dumps[i].Collector == collector {
			before := ns.Dumps[i].Text
			if ns.Dumps[i].Text = f(before); ns.Dumps[i].Text == before {
				t.Fatalf("the edit changed nothing in the %s dump", collector)
			}
			return
		}
	}
	t.Fatalf("no %s dump", collector)
}

func checks(t *testing.T, ns *snapshot.NodeState) []behavior.Finding {
	t.Helper()
	pl, err := Loader{}.Load(ns, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plane)
	if why := p.Unchecked(); why != "" {
		t.Fatalf("the lab's snapshot is unchecked: %s", why)
	}
	return p.Checks(ns.Name, "ipvs")
}

// TestChecks: the plane's own checks find nothing on the node kube-proxy
// left, and each edit of its state exactly its finding.
func TestChecks(t *testing.T) {
	if fs := checks(t, labNode(t)); len(fs) != 0 {
		t.Fatalf("findings on the healthy node: %+v", fs)
	}
	drop := func(line string) func(string) string {
		return func(s string) string { return strings.Replace(s, line+"\n", "", 1) }
	}
	add := func(line string) func(string) string {
		return func(s string) string { return s + line + "\n" }
	}
	for _, c := range []struct {
		what, collector string
		edit            func(string) string
		typ, frontend   string
	}{
		{"a virtual address gone from kube-ipvs0", CollectorKubeIPVS0,
			func(s string) string {
				var kept []string
				for _, l := range strings.Split(s, "\n") {
					if !strings.Contains(l, "inet 10.96.50.11/32") {
						kept = append(kept, l)
					}
				}
				return strings.Join(kept, "\n")
			}, behavior.MissingVIPAddress, "ClusterIP 10.96.50.11:80/TCP"},
		{"an address on kube-ipvs0 no virtual server has", CollectorKubeIPVS0,
			add("4: kube-ipvs0    inet 10.96.50.99/32 scope global kube-ipvs0"), behavior.ExtraVIPAddress, ""},
		{"a ClusterIP gone from KUBE-CLUSTER-IP", CollectorIPSet,
			drop("add KUBE-CLUSTER-IP 10.96.50.10,tcp:80"), behavior.MissingSetMember, "ClusterIP 10.96.50.10:80/TCP"},
		{"a NodePort gone from KUBE-NODE-PORT-TCP", CollectorIPSet,
			drop("add KUBE-NODE-PORT-TCP 30080"), behavior.MissingSetMember, "NodePort 10.0.2.15:30080/TCP"},
		{"a ClusterIP no virtual server has", CollectorIPSet,
			add("add KUBE-CLUSTER-IP 10.96.99.99,tcp:80"), behavior.StaleSetMember, ""},
		{"a virtual server's scheduler changed by hand", CollectorIPVS,
			func(s string) string {
				return strings.Replace(s, "TCP  10.96.50.12:80 rr\n", "TCP  10.96.50.12:80 wrr\n", 1)
			},
			behavior.SchedulerMismatch, "ClusterIP 10.96.50.12:80/TCP"},
		{"a virtual address gone from KUBE-IPVS-IPS", CollectorIPSet,
			drop("add KUBE-IPVS-IPS 10.96.50.13"), behavior.MissingSetMember, ""},
	} {
		ns := labNode(t)
		edit(t, ns, c.collector, c.edit)
		// An address gone from kube-ipvs0 is gone from the node's.
		ns.Addresses = slices.DeleteFunc(ns.Addresses, func(a string) bool {
			return c.typ == behavior.MissingVIPAddress && a == "10.96.50.11"
		})
		fs := checks(t, ns)
		if len(fs) != 1 || fs[0].Type != c.typ || strings.Join(fs[0].Frontends, ",") != c.frontend {
			t.Errorf("%s: %+v, want one %s for %q", c.what, fs, c.typ, c.frontend)
		}
	}
}

// TestUncheckedWithoutSets: a node's state without its ipsets is not
// checked, and says so; its walk is the IPVS table's alone.
func TestUncheckedWithoutSets(t *testing.T) {
	ns := labNode(t)
	ns.Dumps = slices.DeleteFunc(ns.Dumps, func(d snapshot.Dump) bool { return d.Collector == CollectorIPSet })
	pl, err := Loader{}.Load(ns, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plane)
	if why := p.Unchecked(); !strings.Contains(why, "the ipsets (ipset save)") {
		t.Errorf("unchecked: %q", why)
	}
	if _, ok := p.Walker(nil).(*Walker); !ok {
		t.Errorf("the walk without ipsets is %T, want the IPVS table's alone", p.Walker(nil))
	}
}

// TestNodePortsFromTheTableAlone: given only the IPVS table of the lab's
// node (ipvsadm -Ln, as pasted in a ticket), a virtual server on a
// loopback address is a NodePort, one whose port is in the NodePort range
// is taken for one, saying so, and a Service address stays a ClusterIP;
// on the whole state the node's addresses decide, and nothing is guessed.
func TestNodePortsFromTheTableAlone(t *testing.T) {
	ns := labNode(t)
	whole := map[string]behavior.FrontendKind{}
	pl, err := Loader{}.Load(ns, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pl.Frontends() {
		whole[f.Key.IP+":"+strconv.Itoa(int(f.Key.Port))] = f.Key.Kind
	}
	if notes := pl.Notes(); slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "taken for a NodePort") }) {
		t.Errorf("the whole state guesses: %q", notes)
	}
	ns.Dumps = slices.DeleteFunc(ns.Dumps, func(d snapshot.Dump) bool { return d.Collector != CollectorIPVS })
	ns.Addresses = nil
	// Older releases also opened NodePorts on 127.0.0.1 in ipvs mode (a
	// table pasted in a ticket shows 127.0.0.1:30449): the same virtual
	// server there.
	edit(t, ns, CollectorIPVS, func(s string) string {
		return strings.Replace(s, "TCP  10.0.2.15:30080 rr", "TCP  127.0.0.1:30080 rr\nTCP  10.0.2.15:30080 rr", 1)
	})
	whole["127.0.0.1:30080"] = behavior.NodePort
	pl, err = Loader{}.Load(ns, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	nodePorts, loopback := 0, 0
	for _, f := range pl.Frontends() {
		addr := f.Key.IP + ":" + strconv.Itoa(int(f.Key.Port))
		if want := whole[addr]; f.Key.Kind != want {
			t.Errorf("%s: %s from the table alone, %s from the whole state", addr, f.Key.Kind, want)
		}
		if f.Key.Kind == behavior.NodePort {
			nodePorts++
			if strings.HasPrefix(f.Key.IP, "127.") {
				loopback++
			}
		}
	}
	if nodePorts == 0 || loopback == 0 || nodePorts == loopback {
		t.Fatalf("the lab's table has %d NodePorts, %d on loopback: the test needs both kinds", nodePorts, loopback)
	}
	guesses := 0
	for _, n := range pl.Notes() {
		if strings.Contains(n, "taken for a NodePort: its port is in the default NodePort range") {
			guesses++
		}
	}
	if guesses != nodePorts-loopback {
		t.Errorf("%d guesses noted, want %d: %q", guesses, nodePorts-loopback, pl.Notes())
	}
}
