package iptables

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// ipvsRules are ipvs mode's rules for one ClusterIP and one NodePort, as
// kube-proxy writes them (trimmed to what a connection meets).
const ipvsRules = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-IPVS-FILTER - [0:0]
-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT --reject-with icmp-port-unreachable
COMMIT
`

// sets is a handful of ipsets by member, for the walker's edge: the ipvs
// plane's own sets are tested there.
type sets map[string][]string

func (s sets) Has(name string, dirs []string, src, dst netip.Addr, protocol string, sport, dport uint16) (bool, bool) {
	members, ok := s[name]
	if !ok {
		return false, false
	}
	var key string
	for i, d := range dirs {
		a, port := dst, dport
		if d == "src" {
			a, port = src, sport
		}
		if i > 0 {
			key += ","
		}
		switch {
		case name == "KUBE-NODE-PORT-TCP":
			key += netip.AddrPortFrom(a, port).String()[len(a.String())+1:]
		case i == 1:
			key += protocol + ":" + netip.AddrPortFrom(a, port).String()[len(a.String())+1:]
		default:
			key += a.String()
		}
	}
	return slices.Contains(members, key), true
}

// TestLocalIn: ipvs mode's path through iptables. A packet to a ClusterIP
// bound on the node is accepted in nat, passes the ipvs filter (its
// ip:port is in KUBE-CLUSTER-IP), is handed over at local input, and goes
// on to each real server through postrouting, masqueraded only when a rule
// marked it; an address of the set on a port no Service has is rejected
// there; a local real server is delivered without postrouting.
func TestLocalIn(t *testing.T) {
	rs, err := ParseString("ipvs", ipvsRules, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("10.96.0.10")
	node := netip.MustParseAddr("192.168.0.2")
	env := &Env{LocalAddrs: []netip.Addr{vip, node}}
	ipsets := sets{
		"KUBE-CLUSTER-IP":    {"10.96.0.10,tcp:80"},
		"KUBE-IPVS-IPS":      {"10.96.0.10"},
		"KUBE-NODE-PORT-TCP": {"30080"},
		"KUBE-LOOP-BACK":     {"10.244.1.5,tcp:8080,10.244.1.5"},
	}
	handed := 0
	localIn := func(p Packet, o dataplane.WalkOptions) []Onward {
		handed++
		switch netip.AddrPortFrom(p.Dst, p.DstPort).String() {
		case "10.96.0.10:80", "192.168.0.2:30080":
			return []Onward{
				{Probability: 0.5, To: netip.MustParseAddrPort("10.244.1.5:8080"), Hops: []dataplane.Hop{{Table: "ipvs", Rule: "-> 10.244.1.5:8080"}}},
				{Probability: 0.5, To: netip.MustParseAddrPort("192.168.0.2:8080"), Hops: []dataplane.Hop{{Table: "ipvs", Rule: "-> 192.168.0.2:8080"}}},
			}
		}
		return nil
	}
	w := NewWalkerWith(rs, env, Extensions{Sets: ipsets, LocalIn: localIn})
	walk := func(src string, dst netip.Addr, port uint16) map[string]dataplane.Branch {
		out := map[string]dataplane.Branch{}
		for _, b := range w.Walk(Packet{Src: netip.MustParseAddr(src), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: port, Entry: dataplane.Prerouting}) {
			out[b.DNAT+" "+string(b.Verdict)] = b
		}
		return out
	}

	fromPod := walk("10.244.1.5", vip, 80)
	if len(fromPod) != 2 || fromPod["10.244.1.5:8080 ACCEPT"].Probability != 0.5 || fromPod["192.168.0.2:8080 ACCEPT"].Probability != 0.5 {
		t.Fatalf("from a pod to the ClusterIP: %+v", fromPod)
	}
	if b := fromPod["10.244.1.5:8080 ACCEPT"]; !b.Masquerade {
		t.Errorf("a pod reaching itself is not masqueraded (KUBE-LOOP-BACK): %+v", b)
	}
	if b := fromPod["192.168.0.2:8080 ACCEPT"]; b.Masquerade || !slices.ContainsFunc(b.Hops, func(h dataplane.Hop) bool { return h.Table == "ipvs" }) {
		t.Errorf("to a local real server: %+v", b)
	}
	fromOutside := walk("203.0.113.9", vip, 80)
	if b := fromOutside["10.244.1.5:8080 ACCEPT"]; !b.Masquerade {
		t.Errorf("from outside the cluster CIDR the ClusterIP is not masqueraded: %+v", fromOutside)
	}
	if b := fromOutside["192.168.0.2:8080 ACCEPT"]; b.Masquerade {
		t.Errorf("a local real server is masqueraded: %+v", b)
	}
	np := walk("10.244.1.5", node, 30080)
	if b := np["10.244.1.5:8080 ACCEPT"]; !b.Masquerade || len(np) != 2 {
		t.Errorf("NodePort: %+v", np)
	}
	rejected := walk("10.244.1.5", vip, 81)
	if b, ok := rejected[" REJECT"]; len(rejected) != 1 || !ok || b.Probability != 1 {
		t.Errorf("a port no Service has on a virtual address: %+v", rejected)
	}
	before := handed
	if other := walk("10.244.1.5", netip.MustParseAddr("10.244.2.9"), 8080); len(other) != 1 || other[" ACCEPT"].Masquerade || handed != before {
		t.Errorf("a packet routed through the node is no business of local input: %+v", other)
	}
	narrow := w.WalkWith(Packet{Src: netip.MustParseAddr("10.244.1.5"), Dst: vip, Protocol: "tcp", SrcPort: 40000, DstPort: 80, Entry: dataplane.Prerouting}, dataplane.WalkOptions{NoHops: true})
	if len(narrow) != 2 || narrow[0].Hops != nil {
		t.Errorf("without hops: %+v", narrow)
	}
}

// TestSetMatch: -m set without the sets is not evaluated, with a note; a
// negated match inverts the answer; a set the dump lacks is said.
func TestSetMatch(t *testing.T) {
	rs, err := ParseString("sets", `*filter
:INPUT ACCEPT [0:0]
-A INPUT -m set ! --match-set ALLOWED src -j DROP
-A INPUT -m set --match-set MISSING dst -j DROP
COMMIT
`, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pkt := Packet{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Protocol: "tcp", SrcPort: 1, DstPort: 2, Entry: dataplane.Prerouting}
	env := &Env{LocalAddrs: []netip.Addr{pkt.Dst}}
	verdict := func(w *Walker) (dataplane.Verdict, []string) {
		b := w.Walk(pkt)
		if len(b) != 1 {
			t.Fatalf("branches %+v", b)
		}
		return b[0].Verdict, b[0].Notes
	}
	if v, notes := verdict(NewWalker(rs, env)); v != dataplane.Drop || len(notes) == 0 {
		t.Errorf("without sets: %s %q (ALLOWED is taken as empty, so the negated match holds, and said)", v, notes)
	}
	in := sets{"ALLOWED": {"10.0.0.1"}}
	if v, notes := verdict(NewWalkerWith(rs, env, Extensions{Sets: in})); v != dataplane.Accept || len(notes) != 1 {
		t.Errorf("source in ALLOWED: %s %q, want ACCEPT and a note on MISSING", v, notes)
	}
	out := sets{"ALLOWED": {"10.0.0.9"}}
	if v, _ := verdict(NewWalkerWith(rs, env, Extensions{Sets: out})); v != dataplane.Drop {
		t.Errorf("source not in ALLOWED: %s", v)
	}
}

// TestIPVSMatch: -m ipvs matches a packet IPVS sent on, by its virtual
// address, port and protocol, and never one IPVS did not handle.
func TestIPVSMatch(t *testing.T) {
	rs, err := ParseString("ipvs-match", `*filter
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A OUTPUT -m ipvs --vaddr 10.96.0.20/32 --vport 80 --vproto tcp -j DROP
COMMIT
`, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("10.96.0.20")}}
	w := NewWalkerWith(rs, env, Extensions{LocalIn: func(p Packet, _ dataplane.WalkOptions) []Onward {
		if p.DstPort != 80 {
			return nil
		}
		return []Onward{{Probability: 1, To: netip.MustParseAddrPort("10.244.1.9:8080")}}
	}})
	for dst, want := range map[string]dataplane.Verdict{"10.96.0.20:80": dataplane.Drop, "10.96.0.10:80": dataplane.Accept, "10.244.1.9:8080": dataplane.Accept} {
		ap := netip.MustParseAddrPort(dst)
		entry := dataplane.Prerouting
		if !env.IsLocal(ap.Addr()) {
			entry = dataplane.Output // the node itself, straight to the backend
		}
		b := w.Walk(Packet{Src: netip.MustParseAddr("10.244.2.3"), Dst: ap.Addr(), DstPort: ap.Port(), SrcPort: 40000, Protocol: "tcp", Entry: entry})
		if len(b) != 1 || b[0].Verdict != want {
			t.Errorf("to %s: %+v, want %s", dst, b, want)
		}
	}
}
