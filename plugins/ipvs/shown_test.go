package ipvs

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// loadShownOf loads a node's state of the given dumps (collector, text).
func loadShownOf(t *testing.T, family string, dumps ...string) *Plane {
	t.Helper()
	ns := &snapshot.NodeState{Name: "n1"}
	for i := 0; i+1 < len(dumps); i += 2 {
		ns.Dumps = append(ns.Dumps, snapshot.Dump{Collector: dumps[i], Origin: "dump", Text: dumps[i+1]})
	}
	pl, err := Loader{}.Load(ns, family)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pl.(*Plane)
	if !ok || p == nil {
		t.Fatalf("no plane: %v", pl)
	}
	return p
}

func keysOf(p *Plane) []string {
	var out []string
	for _, f := range p.Frontends() {
		out = append(out, f.Key.String())
	}
	return out
}

func hasNote(p *Plane, parts ...string) bool {
	for _, n := range p.Notes() {
		ok := true
		for _, s := range parts {
			ok = ok && strings.Contains(n, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// The first lines of testdata/wild/28 (sealos, ipset list), cut as the
// ticket is: 143 entries counted, 3 listed.
const sealosSets = `Name: KUBE-CLUSTER-IP
Type: hash:ip,port
Revision: 5
Header: family inet hashsize 1024 maxelem 65536
Size in memory: 8696
References: 2
Number of entries: 143
Members:
10.68.135.246,tcp:39080
10.68.0.10,udp:53
10.68.0.10,tcp:53
`

// TestShownSets: kube-proxy's sets alone give their members as frontends
// that go on in the IPVS table not given (an unknown outcome, the member
// as its rule), and a listing cut short keeps what it shows, with a note.
func TestShownSets(t *testing.T) {
	p := loadShownOf(t, "IPv4", CollectorIPSet, sealosSets)
	want := []string{"ClusterIP 10.68.135.246:39080/TCP", "ClusterIP 10.68.0.10:53/UDP", "ClusterIP 10.68.0.10:53/TCP"}
	if got := keysOf(p); !slices.Equal(got, want) {
		t.Errorf("frontends %v, want %v", got, want)
	}
	if !p.HasKubeProxy() || p.Unchecked() == "" {
		t.Errorf("HasKubeProxy %v, Unchecked %q", p.HasKubeProxy(), p.Unchecked())
	}
	if !hasNote(p, "3 of the 143", "not known") {
		t.Errorf("no note of the cut set: %q", p.Notes())
	}
	if !hasNote(p, "only kube-proxy's ipsets were given", "ipvsadm -Ln") {
		t.Errorf("no note of the missing table: %q", p.Notes())
	}
	pkt := dataplane.Packet{Src: netip.MustParseAddr("10.244.1.20"), Dst: netip.MustParseAddr("10.68.0.10"), DstPort: 53, Protocol: "udp", Entry: dataplane.Prerouting}
	br := p.Walker(&dataplane.Env{}).Walk(pkt)
	if len(br) != 1 || br[0].Verdict != dataplane.Missing || br[0].Missing != missingTable || len(br[0].Hops) != 1 || br[0].Hops[0].Line != 10 {
		t.Errorf("walk to a set member: %+v", br)
	}
	if d := p.Describe(br[0].Hops[0]); d.Text != "ipset KUBE-CLUSTER-IP member 10.68.0.10,udp:53" {
		t.Errorf("describe: %q", d.Text)
	}
	pkt.DstPort = 54
	if br := p.Walker(&dataplane.Env{}).Walk(pkt); len(br) != 1 || br[0].Verdict != dataplane.Accept || br[0].Missing != "" {
		t.Errorf("walk to no member: %+v", br)
	}
	if f := p.Checks("n1", "ipvs"); len(f) != 0 {
		t.Errorf("checks without a table: %v", f)
	}
	// With the whole node's state, a cut listing is still refused.
	if _, err := ParseIPSets(sealosSets); err == nil || !strings.Contains(err.Error(), "3 of its 143") {
		t.Errorf("cut listing: %v", err)
	}
}

// TestShownNodePorts: NodePort sets give NodePorts on every node address
// (bitmap:port) or on one (the SCTP hash set); LOCAL subsets add nothing.
func TestShownNodePorts(t *testing.T) {
	p := loadShownOf(t, "IPv4", CollectorIPSet, `create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
create KUBE-NODE-PORT-LOCAL-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-LOCAL-TCP 30080
create KUBE-NODE-PORT-SCTP-HASH hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-NODE-PORT-SCTP-HASH 192.0.2.10,sctp:30300
create KUBE-LOAD-BALANCER hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-LOAD-BALANCER 203.0.113.7,tcp:443
create KUBE-EXTERNAL-IP hash:ip,port family inet hashsize 1024 maxelem 65536
`)
	want := []string{"LoadBalancer 203.0.113.7:443/TCP", "NodePort 30080/TCP", "NodePort 192.0.2.10:30300/SCTP"}
	if got := keysOf(p); !slices.Equal(got, want) {
		t.Errorf("frontends %v, want %v", got, want)
	}
	if !hasNote(p, "KUBE-EXTERNAL-IP: empty") || hasNote(p, "KUBE-LOOP-BACK") {
		t.Errorf("no note of the empty set: %q", p.Notes())
	}
	pkt := dataplane.Packet{Dst: netip.MustParseAddr("198.51.100.4"), DstPort: 30080, Protocol: "tcp"}
	if br := p.Walker(&dataplane.Env{LocalAddrs: []netip.Addr{pkt.Dst}}).Walk(pkt); len(br) != 1 || br[0].Verdict != dataplane.Missing {
		t.Errorf("NodePort on a node address: %+v", br)
	}
	if br := p.Walker(&dataplane.Env{}).Walk(pkt); br[0].Verdict != dataplane.Accept {
		t.Errorf("NodePort on an address not the node's: %+v", br)
	}
}

// TestShownOtherFamily: testdata/wild/29's IPv6 sets, all empty, asked
// for IPv4: no frontend, and notes that say why.
func TestShownOtherFamily(t *testing.T) {
	p := loadShownOf(t, "IPv4", CollectorIPSet, `Name: KUBE-HEALTH-CHECK-NODE-PORT
Type: bitmap:port
Revision: 3
Header: range 0-65535
Size in memory: 8264
References: 1
Number of entries: 0
Members:

Name: KUBE-6-CLUSTER-IP
Type: hash:ip,port
Revision: 5
Header: family inet6 hashsize 1024 maxelem 65536
Size in memory: 216
References: 0
Number of entries: 0
Members:
`)
	if got := keysOf(p); len(got) != 0 {
		t.Errorf("frontends %v", got)
	}
	if !p.HasKubeProxy() {
		t.Error("kube-proxy's sets not taken for ipvs mode's")
	}
	if !hasNote(p, "KUBE-6-CLUSTER-IP are kube-proxy's IPv6 sets (0 members in all)") || !hasNote(p, "none of kube-proxy's IPv4 sets of Service frontends") {
		t.Errorf("notes: %q", p.Notes())
	}
	if p6 := loadShownOf(t, "IPv6", CollectorIPSet, "create KUBE-6-CLUSTER-IP hash:ip,port family inet6\nadd KUBE-6-CLUSTER-IP fd00::1,tcp:443\n"); !slices.Equal(keysOf(p6), []string{"ClusterIP fd00::1:443/TCP"}) {
		t.Errorf("IPv6 frontends %v", keysOf(p6))
	}
}

// TestShownKubeIPVS0: testdata/wild/11's excerpt of ip addr: kube-ipvs0's
// addresses are no frontend (no port), but a note names each, and the
// "..." of the ticket is read.
func TestShownKubeIPVS0(t *testing.T) {
	p := loadShownOf(t, "IPv4", CollectorKubeIPVS0, `...
4: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default
    link/ether c2:18:64:e5:f3:02 brd ff:ff:ff:ff:ff:ff
    inet 10.49.0.10/32 brd 10.49.0.10 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet 10.49.0.1/32 brd 10.49.0.1 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
`)
	if got := keysOf(p); len(got) != 0 {
		t.Errorf("frontends %v", got)
	}
	if !p.HasKubeProxy() || !hasNote(p, "kube-ipvs0 holds 10.49.0.10, 10.49.0.1:", "ports, protocols and backends are not known") || !hasNote(p, "only kube-ipvs0's addresses were given") {
		t.Errorf("HasKubeProxy %v, notes %q", p.HasKubeProxy(), p.Notes())
	}
	if f := p.Checks("n1", "ipvs"); len(f) != 0 {
		t.Errorf("checks without a table (every address would be extra): %v", f)
	}
	if f := p.Leftovers("n1", "iptables"); len(f) != 0 {
		t.Errorf("leftovers without a table: %v", f)
	}
	// With the sets, an address they show ports of is said by those.
	p = loadShownOf(t, "IPv4", CollectorKubeIPVS0, "4: kube-ipvs0: <BROADCAST,NOARP> mtu 1500\n    inet 10.49.0.10/32 scope global kube-ipvs0\n    inet 10.49.0.1/32 scope global kube-ipvs0\n",
		CollectorIPSet, "create KUBE-CLUSTER-IP hash:ip,port family inet\nadd KUBE-CLUSTER-IP 10.49.0.1,tcp:443\n")
	if !hasNote(p, "kube-ipvs0 holds 10.49.0.10:") || hasNote(p, "10.49.0.1:") || !slices.Equal(keysOf(p), []string{"ClusterIP 10.49.0.1:443/TCP"}) {
		t.Errorf("frontends %v, notes %q", keysOf(p), p.Notes())
	}
}

// TestShownLoopBack: testdata/wild/46's KUBE-LOOP-BACK names the node's
// endpoints, each once, in a note; they are no frontend.
func TestShownLoopBack(t *testing.T) {
	p := loadShownOf(t, "IPv4", CollectorIPSet, `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add KUBE-LOOP-BACK 185.113.124.205,tcp:6443,185.113.124.205
add KUBE-LOOP-BACK 10.32.0.3,udp:53,10.32.0.3
add KUBE-LOOP-BACK 10.32.0.3,udp:53,10.32.0.3
`)
	if !hasNote(p, "KUBE-LOOP-BACK (line 3) holds 2 endpoints on this node", "185.113.124.205:6443/TCP, 10.32.0.3:53/UDP;") {
		t.Errorf("notes: %q", p.Notes())
	}
	if got := keysOf(p); !slices.Equal(got, []string{"ClusterIP 10.96.0.10:53/UDP"}) {
		t.Errorf("frontends %v", got)
	}
}
