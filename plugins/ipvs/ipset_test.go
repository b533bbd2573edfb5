package ipvs

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// ipsetSave is kube-proxy's sets in `ipset save` form, as ipset 7.17
// prints them.
const ipsetSave = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x5c3e3b1a
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x9a3c2f11
add KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5
create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536 comment
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.10,tcp:80,10.0.0.0/8 comment "x y"
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-IPVS-IPS 10.96.0.10
`

// ipsetList is the same sets in `ipset list` form.
const ipsetList = `Name: KUBE-CLUSTER-IP
Type: hash:ip,port
Revision: 6
Header: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x5c3e3b1a
Size in memory: 520
References: 2
Number of entries: 2
Members:
10.96.0.1,tcp:443
10.96.0.10,udp:53

Name: KUBE-NODE-PORT-TCP
Type: bitmap:port
Revision: 3
Header: range 0-65535
Size in memory: 8264
References: 1
Number of entries: 1
Members:
30080

Name: KUBE-LOOP-BACK
Type: hash:ip,port,ip
Revision: 6
Header: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x9a3c2f11
Size in memory: 264
References: 1
Number of entries: 1
Members:
10.244.1.5,tcp:8080,10.244.1.5

Name: KUBE-LOAD-BALANCER-SOURCE-CIDR
Type: hash:ip,port,net
Revision: 8
Header: family inet hashsize 1024 maxelem 65536 comment
Size in memory: 642
References: 0
Number of entries: 1
Members:
192.0.2.10,tcp:80,10.0.0.0/8 comment "x y"

Name: KUBE-IPVS-IPS
Type: hash:ip
Revision: 6
Header: family inet hashsize 1024 maxelem 65536
Size in memory: 256
References: 1
Number of entries: 1
Members:
10.96.0.10
`

// shape is what a parse says of the sets, lines left out (a save of a
// listing numbers them otherwise).
func shape(s *IPSets) map[string]string {
	m := map[string]string{}
	for name, set := range s.Sets {
		var ms []string
		for _, mb := range set.Members {
			ms = append(ms, mb.Text)
		}
		m[name] = strings.Join([]string{set.Name, set.Type, set.Family, strings.Join(set.Options, " "), strings.Join(ms, " ")}, "|")
	}
	return m
}

func mustIPSets(t *testing.T, text string) *IPSets {
	t.Helper()
	s, err := ParseIPSets(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParseIPSetsSave reads every field of a save: type, family apart
// from the other options, members without their comments, lines.
func TestParseIPSetsSave(t *testing.T) {
	s := mustIPSets(t, ipsetSave)
	if len(s.Sets) != 5 || len(s.Notes) != 0 {
		t.Fatalf("%d sets, notes %q", len(s.Sets), s.Notes)
	}
	ci := s.Sets["KUBE-CLUSTER-IP"]
	want := &IPSet{Name: "KUBE-CLUSTER-IP", Type: "hash:ip,port", Family: "inet",
		Options: []string{"hashsize", "1024", "maxelem", "65536", "bucketsize", "12", "initval", "0x5c3e3b1a"},
		Members: []Member{{"10.96.0.1,tcp:443", 2}, {"10.96.0.10,udp:53", 3}}, Line: 1}
	if !reflect.DeepEqual(ci, want) {
		t.Errorf("KUBE-CLUSTER-IP:\n got %+v\nwant %+v", ci, want)
	}
	np := s.Sets["KUBE-NODE-PORT-TCP"]
	if np.Family != "" || !reflect.DeepEqual(np.Options, []string{"range", "0-65535"}) || np.Line != 4 || np.Members[0] != (Member{"30080", 5}) {
		t.Errorf("KUBE-NODE-PORT-TCP: %+v", np)
	}
	if m := s.Sets["KUBE-LOAD-BALANCER-SOURCE-CIDR"].Members; len(m) != 1 || m[0].Text != "192.0.2.10,tcp:80,10.0.0.0/8" {
		t.Errorf("a member's comment is taken for the entry: %+v", m)
	}
}

// TestParseIPSetsList reads the listing of the same sets as the save:
// same sets, members on their own lines.
func TestParseIPSetsList(t *testing.T) {
	l := mustIPSets(t, ipsetList)
	if got, want := shape(l), shape(mustIPSets(t, ipsetSave)); !reflect.DeepEqual(got, want) {
		t.Errorf("list and save differ:\n list %q\n save %q", got, want)
	}
	if len(l.Notes) != 0 {
		t.Errorf("notes: %q", l.Notes)
	}
	if s := l.Sets["KUBE-NODE-PORT-TCP"]; s.Line != 12 || s.Members[0].Line != 20 {
		t.Errorf("KUBE-NODE-PORT-TCP at line %d, member at %d", s.Line, s.Members[0].Line)
	}
	// An empty set, ipset list -t of empty sets, CRLF line ends.
	e := mustIPSets(t, "Name: A\r\nType: hash:ip\r\nHeader: family inet6 hashsize 1024\r\nNumber of entries: 0\r\nMembers:\r\n\r\nName: B\r\nType: bitmap:port\r\nHeader: range 0-65535\r\nNumber of entries: 0\r\n")
	// A set short of members before another: said, not an error.
	short := mustIPSets(t, strings.Replace(ipsetList, "10.96.0.10,udp:53\n", "", 1))
	if len(short.Notes) != 1 || short.Notes[0] != "line 1: set KUBE-CLUSTER-IP: 1 of the 2 members its header counts are listed" {
		t.Errorf("notes: %q", short.Notes)
	}
	if a := e.Sets["A"]; a == nil || a.Family != "inet6" || len(a.Members) != 0 || e.Sets["B"] == nil || e.Sets["B"].Type != "bitmap:port" {
		t.Errorf("empty sets: %q", shape(e))
	}
}

// TestIPSetNotes keeps what the reader does not know, says so, and
// never matches through it.
func TestIPSetNotes(t *testing.T) {
	s := mustIPSets(t, `create F list:set size 8
add F KUBE-CLUSTER-IP
create G hash:ip family inet hashsize 1024 frobnicate
create N hash:net family inet
add N 10.0.0.0/8
add N 10.1.0.0/16 nomatch
`)
	if len(s.Notes) != 3 || !strings.Contains(s.Notes[0], `line 1: set F: type "list:set" not understood`) ||
		!strings.Contains(s.Notes[1], `line 3: set G: option "frobnicate" not understood`) ||
		!strings.Contains(s.Notes[2], "line 6: set N: 10.1.0.0/16 is a nomatch exception") {
		t.Errorf("notes: %q", s.Notes)
	}
	if f := s.Sets["F"]; f.Members[0].Text != "KUBE-CLUSTER-IP" || f.Family != "" {
		t.Errorf("list:set: %+v", f)
	}
	if g := s.Sets["G"]; !reflect.DeepEqual(g.Options, []string{"hashsize", "1024", "frobnicate"}) {
		t.Errorf("an unknown option is not kept: %q", g.Options)
	}
	a := netip.MustParseAddr("10.0.0.1")
	if m, ok := s.Has("F", []string{"dst"}, a, a, "tcp", 1, 1); m || ok {
		t.Errorf("list:set: match %v ok %v, want neither", m, ok)
	}
	if m, ok := s.Has("NONE", []string{"dst"}, a, a, "tcp", 1, 1); m || ok {
		t.Errorf("a set that is not there: match %v ok %v, want neither", m, ok)
	}
}

// ipsetAll is a set of every type kube-proxy makes, both families, and
// what ipset takes beyond its own dumps: ranges, a port without its
// protocol, a prefix in hash:ip, netmask.
const ipsetAll = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
add KUBE-CLUSTER-IP 10.96.0.11,80
add KUBE-CLUSTER-IP 10.96.0.12,sctp:9000
add KUBE-CLUSTER-IP 10.96.1.1-10.96.1.5,tcp:81-82
add KUBE-CLUSTER-IP 10.96.0.13,icmp:echo-request
create KUBE-6-CLUSTER-IP hash:ip,port family inet6 hashsize 1024 maxelem 65536
add KUBE-6-CLUSTER-IP fd00::10,tcp:80
add KUBE-6-CLUSTER-IP fd00::20-fd00::2f,udp:53
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
add KUBE-NODE-PORT-TCP 30000-30010
create KUBE-NODE-PORT-SCTP-HASH hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-NODE-PORT-SCTP-HASH 192.0.2.2,sctp:30090
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5
create KUBE-6-LOOP-BACK hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536
add KUBE-6-LOOP-BACK fd00:244::5,tcp:8080,fd00:244::5
create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536 comment
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.10,tcp:80,10.0.0.0/16 comment "a"
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.10,tcp:80,172.16.0.0/12
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.10,tcp:80,198.51.100.7
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.11,tcp:80,203.0.113.1-203.0.113.9
create KUBE-6-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet6 hashsize 1024 maxelem 65536
add KUBE-6-LOAD-BALANCER-SOURCE-CIDR 2001:db8::10,tcp:80,fd00:1::/64
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-IPVS-IPS 10.96.0.10
add KUBE-IPVS-IPS 10.97.0.0/30
create KUBE-6-IPVS-IPS hash:ip family inet6 hashsize 1024 maxelem 65536
add KUBE-6-IPVS-IPS fd00::10
create MASKED hash:ip family inet hashsize 1024 maxelem 65536 netmask 24
add MASKED 10.1.2.0
create NETS hash:net family inet hashsize 1024 maxelem 65536
add NETS 10.0.0.0/16
add NETS 10.0.0.0/8
`

// TestIPSetHas matches packets against every kind of set, in and out,
// by each dimension in turn.
func TestIPSetHas(t *testing.T) {
	s := mustIPSets(t, ipsetAll)
	if len(s.Notes) != 0 {
		t.Fatalf("notes: %q", s.Notes)
	}
	ip := netip.MustParseAddr
	pod, node := ip("10.244.1.5"), ip("192.0.2.2")
	dd, dds, d := []string{"dst", "dst"}, []string{"dst", "dst", "src"}, []string{"dst"}
	cases := []struct {
		name, set    string
		dirs         []string
		src, dst     netip.Addr
		proto        string
		sport, dport uint16
		match, ok    bool
	}{
		{"cluster IP", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.1"), "tcp", 40000, 443, true, true},
		{"cluster IP, other port", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.1"), "tcp", 40000, 444, false, true},
		{"cluster IP, other protocol", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.1"), "udp", 40000, 443, false, true},
		{"cluster IP, other address", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.2"), "tcp", 40000, 443, false, true},
		{"udp", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.10"), "udp", 40000, 53, true, true},
		{"udp member, tcp packet", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.10"), "tcp", 40000, 53, false, true},
		{"port without protocol is tcp", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.11"), "tcp", 1, 80, true, true},
		{"port without protocol, udp packet", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.11"), "udp", 1, 80, false, true},
		{"sctp", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.12"), "sctp", 1, 9000, true, true},
		{"src,dst: the source is not the cluster IP", "KUBE-CLUSTER-IP", []string{"src", "dst"}, pod, ip("10.96.0.1"), "tcp", 40000, 443, false, true},
		{"src,dst", "KUBE-CLUSTER-IP", []string{"src", "dst"}, ip("10.96.0.1"), pod, "tcp", 40000, 443, true, true},
		{"dst,src: the source port", "KUBE-CLUSTER-IP", []string{"dst", "src"}, pod, ip("10.96.0.1"), "tcp", 443, 40000, true, true},
		{"address range, port range", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.1.3"), "tcp", 1, 82, true, true},
		{"address range end", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.1.5"), "tcp", 1, 81, true, true},
		{"past the address range", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.1.6"), "tcp", 1, 81, false, true},
		{"past the port range", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.1.3"), "tcp", 1, 83, false, true},
		{"range, other protocol", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.1.3"), "udp", 1, 81, false, true},
		{"icmp member matches no port", "KUBE-CLUSTER-IP", dd, pod, ip("10.96.0.13"), "icmp", 0, 0, false, true},
		{"one direction for two dimensions", "KUBE-CLUSTER-IP", d, pod, ip("10.96.0.1"), "tcp", 1, 443, false, true},
		{"a direction neither src nor dst", "KUBE-CLUSTER-IP", []string{"dst", "up"}, pod, ip("10.96.0.1"), "tcp", 1, 443, false, true},
		{"IPv6 packet, IPv4 set", "KUBE-CLUSTER-IP", dd, ip("fd00::1"), ip("fd00::10"), "tcp", 1, 80, false, true},
		{"v6 cluster IP", "KUBE-6-CLUSTER-IP", dd, ip("fd00:244::5"), ip("fd00::10"), "tcp", 1, 80, true, true},
		{"v6, other port", "KUBE-6-CLUSTER-IP", dd, ip("fd00:244::5"), ip("fd00::10"), "tcp", 1, 81, false, true},
		{"v6 range", "KUBE-6-CLUSTER-IP", dd, ip("fd00:244::5"), ip("fd00::2a"), "udp", 1, 53, true, true},
		{"past the v6 range", "KUBE-6-CLUSTER-IP", dd, ip("fd00:244::5"), ip("fd00::30"), "udp", 1, 53, false, true},
		{"IPv4 packet, IPv6 set", "KUBE-6-CLUSTER-IP", dd, pod, ip("10.96.0.1"), "tcp", 1, 80, false, true},
		{"node port", "KUBE-NODE-PORT-TCP", d, pod, node, "tcp", 1, 30080, true, true},
		{"node port, any protocol", "KUBE-NODE-PORT-TCP", d, pod, node, "udp", 1, 30080, true, true},
		{"node port, IPv6", "KUBE-NODE-PORT-TCP", d, ip("fd00::1"), ip("fd00::2"), "tcp", 1, 30080, true, true},
		{"not a node port", "KUBE-NODE-PORT-TCP", d, pod, node, "tcp", 1, 30081, false, true},
		{"node port range", "KUBE-NODE-PORT-TCP", d, pod, node, "tcp", 1, 30010, true, true},
		{"past the node port range", "KUBE-NODE-PORT-TCP", d, pod, node, "tcp", 1, 30011, false, true},
		{"node port by source", "KUBE-NODE-PORT-TCP", []string{"src"}, pod, node, "tcp", 30080, 1, true, true},
		{"sctp node port", "KUBE-NODE-PORT-SCTP-HASH", dd, pod, node, "sctp", 1, 30090, true, true},
		{"sctp node port, tcp packet", "KUBE-NODE-PORT-SCTP-HASH", dd, pod, node, "tcp", 1, 30090, false, true},
		{"hairpin", "KUBE-LOOP-BACK", dds, pod, pod, "tcp", 1, 8080, true, true},
		{"not a hairpin: other source", "KUBE-LOOP-BACK", dds, ip("10.244.1.6"), pod, "tcp", 1, 8080, false, true},
		{"not a hairpin: other port", "KUBE-LOOP-BACK", dds, pod, pod, "tcp", 1, 8081, false, true},
		{"hairpin, two directions for three dimensions", "KUBE-LOOP-BACK", dd, pod, pod, "tcp", 1, 8080, false, true},
		{"v6 hairpin", "KUBE-6-LOOP-BACK", dds, ip("fd00:244::5"), ip("fd00:244::5"), "tcp", 1, 8080, true, true},
		{"v6 not a hairpin", "KUBE-6-LOOP-BACK", dds, ip("fd00:244::6"), ip("fd00:244::5"), "tcp", 1, 8080, false, true},
		{"source in the range", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("10.0.255.1"), ip("192.0.2.10"), "tcp", 1, 80, true, true},
		{"source out of the range", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("10.1.0.1"), ip("192.0.2.10"), "tcp", 1, 80, false, true},
		{"source in a /12", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("172.31.255.255"), ip("192.0.2.10"), "tcp", 1, 80, true, true},
		{"source past a /12", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("172.32.0.0"), ip("192.0.2.10"), "tcp", 1, 80, false, true},
		{"host without /len", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("198.51.100.7"), ip("192.0.2.10"), "tcp", 1, 80, true, true},
		{"next to the host", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("198.51.100.8"), ip("192.0.2.10"), "tcp", 1, 80, false, true},
		{"source range in a net dimension", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("203.0.113.9"), ip("192.0.2.11"), "tcp", 1, 80, true, true},
		{"source past it", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("203.0.113.10"), ip("192.0.2.11"), "tcp", 1, 80, false, true},
		{"allowed source, other load balancer", "KUBE-LOAD-BALANCER-SOURCE-CIDR", dds, ip("10.0.0.1"), ip("192.0.2.11"), "tcp", 1, 80, false, true},
		{"v6 source range", "KUBE-6-LOAD-BALANCER-SOURCE-CIDR", dds, ip("fd00:1::ffff"), ip("2001:db8::10"), "tcp", 1, 80, true, true},
		{"v6 source out of it", "KUBE-6-LOAD-BALANCER-SOURCE-CIDR", dds, ip("fd00:2::1"), ip("2001:db8::10"), "tcp", 1, 80, false, true},
		{"bound address", "KUBE-IPVS-IPS", d, pod, ip("10.96.0.10"), "tcp", 1, 1, true, true},
		{"unbound address", "KUBE-IPVS-IPS", d, pod, ip("10.96.0.11"), "tcp", 1, 1, false, true},
		{"prefix in hash:ip", "KUBE-IPVS-IPS", d, pod, ip("10.97.0.3"), "tcp", 1, 1, true, true},
		{"past the prefix in hash:ip", "KUBE-IPVS-IPS", d, pod, ip("10.97.0.4"), "tcp", 1, 1, false, true},
		{"v6 bound address", "KUBE-6-IPVS-IPS", d, ip("fd00::1"), ip("fd00::10"), "udp", 1, 1, true, true},
		{"v6 unbound address", "KUBE-6-IPVS-IPS", d, ip("fd00::1"), ip("fd00::11"), "udp", 1, 1, false, true},
		{"netmask 24", "MASKED", d, pod, ip("10.1.2.200"), "tcp", 1, 1, true, true},
		{"past netmask 24", "MASKED", d, pod, ip("10.1.3.0"), "tcp", 1, 1, false, true},
		{"in the /16 and the /8", "NETS", d, pod, ip("10.0.9.9"), "tcp", 1, 1, true, true},
		{"in the /8 only", "NETS", d, pod, ip("10.5.0.0"), "tcp", 1, 1, true, true},
		{"in neither", "NETS", d, pod, ip("11.0.0.0"), "tcp", 1, 1, false, true},
		{"no such set", "KUBE-EXTERNAL-IP", dd, pod, ip("10.96.0.1"), "tcp", 1, 443, false, false},
	}
	for _, c := range cases {
		m, ok := s.Has(c.set, c.dirs, c.src, c.dst, c.proto, c.sport, c.dport)
		if m != c.match || ok != c.ok {
			t.Errorf("%s: %s %v %s %s>%s %d>%d: match %v ok %v, want %v %v", c.name, c.set, c.dirs, c.proto, c.src, c.dst, c.sport, c.dport, m, ok, c.match, c.ok)
		}
	}
}

// TestIPSetHasIndex: the /8 member of a hash:net with a /16 of the same
// address does not stand for the /16's neighbours in its stead, nor the
// other way round; and a set made by hand is matched as a parsed one.
func TestIPSetHasIndex(t *testing.T) {
	s := mustIPSets(t, "create N hash:net family inet\nadd N 10.0.0.0/16\nadd N 11.0.0.0/8\n")
	a := netip.MustParseAddr
	for _, c := range []struct {
		dst  string
		want bool
	}{{"10.0.1.1", true}, {"10.5.0.0", false}, {"11.5.0.0", true}, {"11.0.0.0", true}, {"12.0.0.0", false}} {
		if m, _ := s.Has("N", []string{"dst"}, a("1.1.1.1"), a(c.dst), "tcp", 1, 1); m != c.want {
			t.Errorf("%s: match %v, want %v", c.dst, m, c.want)
		}
	}
	byHand := &IPSets{Sets: map[string]*IPSet{"S": {Name: "S", Type: "hash:ip,port", Members: []Member{{Text: "10.96.0.1,tcp:443"}, {Text: "not an entry"}}}}}
	if m, ok := byHand.Has("S", []string{"dst", "dst"}, a("1.1.1.1"), a("10.96.0.1"), "tcp", 1, 443); !m || !ok {
		t.Errorf("a set made by hand: match %v ok %v", m, ok)
	}
}

// TestParseIPSetsErrors names the line and column of what is wrong.
func TestParseIPSetsErrors(t *testing.T) {
	const head = "create S hash:ip,port family inet hashsize 1024\n"
	cases := []parseErrorCase{
		{"bad address", head + "add S 10.96.0.300,tcp:80\n", 2, 7, `"10.96.0.300": want an address`},
		{"bad port", head + "add S 10.96.0.1,tcp:99999\n", 2, 17, `port "99999": want a number from 0 to 65535`},
		{"IPv6 in inet", head + "add S fd00::10,tcp:80\n", 2, 7, "want an IPv4 address (family inet)"},
		{"IPv4 in inet6", "create S hash:ip,port family inet6\nadd S 10.0.0.1,tcp:80\n", 2, 7, "want an IPv6 address (family inet6)"},
		{"one dimension short", head + "add S 10.96.0.1\n", 2, 7, "want 2 dimensions"},
		{"backward range", head + "add S 10.0.0.9-10.0.0.1,tcp:80\n", 2, 7, "the range ends before it starts"},
		{"backward port range", head + "add S 10.0.0.1,tcp:90-80\n", 2, 16, "the range ends before it starts"},
		{"prefix too long", "create N hash:net family inet\nadd N 10.0.0.0/33\n", 2, 7, "prefix length 33 is past"},
		{"bitmap port", "create P bitmap:port range 0-65535\n\n# a comment\nadd P 70000\n", 4, 7, `port "70000"`},
		{"add before create", "add S 10.0.0.1,tcp:80\n", 1, 5, `add to set "S", which no create line before makes`},
		{"created twice", head + "create S hash:ip\n", 2, 8, "set S is already made on line 1"},
		{"bad family", "create S hash:ip family ipx\n", 1, 25, `family "ipx"`},
		{"option without value", "create S hash:ip family inet hashsize\n", 1, 30, "hashsize needs a value"},
		{"neither form", head + "  flush S\n", 2, 3, `"flush": want create or add`},
		{"create without type", "create S\n", 1, 1, "create needs a set name and a type"},
		{"list: bad member", "Name: S\nType: hash:ip,port\nHeader: family inet\nMembers:\n10.0.0.1,tcp:80\n10.0.0.1,tcp:8x\n", 6, 10, `port "8x"`},
		{"list: ends in the header", "Name: S\nType: hash:ip\nRevision: 6\nHeader: family inet\n", 4, 1, "set S: the dump ends inside its header"},
		{"list: ends after Name", ipsetList + "\nName: T\n\n", 52, 1, "set T: the dump ends inside its header"},
		{"list: header cut by a blank line", "Name: S\nType: hash:ip\n\nName: T\n", 3, 1, "set S: its header ends before Members:"},
		{"list: ends inside the members", strings.TrimSuffix(ipsetList, "10.96.0.10\n"), 49, 1, "set KUBE-IPVS-IPS: the dump ends after 0 of its 1 members"},
		{"list -t", "Name: S\nType: hash:ip\nNumber of entries: 3\n\n", 3, 20, "its 3 members are not listed"},
		{"list: before Name", "Type: hash:ip\n", 1, 1, `"Type:": want create or add`},
		{"list: a line outside a set", "Name: S\nType: hash:ip\nMembers:\n\n10.0.0.1\n", 5, 1, `"10.0.0.1": want a set's Name: line`},
		{"list: not a header", "Name: S\nType hash:ip\n", 2, 1, "want a header line"},
		{"list: Members before Type", "Name: S\nMembers:\n", 2, 1, "Members: before Type:"},
		{"list: two names", "Name: S T\n", 1, 1, "Name: wants one set name"},
		{"quoted name", `create "S" hash:ip` + "\n", 1, 8, "want one without quotes"},
	}
	wantParseErrors(t, cases, func(text string) error {
		_, err := ParseIPSets(text)
		return err
	})
}

// TestIPSetSave prints sets as ipset save does, sorted by name, and
// reads back to the same sets, from a save or a listing.
func TestIPSetSave(t *testing.T) {
	s := mustIPSets(t, ipsetList)
	want := `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x5c3e3b1a
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-IPVS-IPS 10.96.0.10
create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536 comment
add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.10,tcp:80,10.0.0.0/8
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x9a3c2f11
add KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
`
	if got := s.Save(); got != want {
		t.Errorf("Save:\n%s\nwant:\n%s", got, want)
	}
	for _, text := range []string{ipsetSave, ipsetList, ipsetAll, "create F list:set size 8\nadd F A\ncreate H hash:ip\nadd H 10.0.0.1\n"} {
		a := mustIPSets(t, text)
		b := mustIPSets(t, a.Save())
		if !reflect.DeepEqual(shape(a), shape(b)) {
			t.Errorf("Save does not read back:\n%q\n%q", shape(a), shape(b))
		}
	}
	// A hash set created without family is inet, and saved so.
	if got := mustIPSets(t, "create H hash:ip\n").Save(); got != "create H hash:ip family inet\n" {
		t.Errorf("Save: %q", got)
	}
}

func FuzzParseIPSets(f *testing.F) {
	for _, s := range []string{ipsetSave, ipsetList, ipsetAll, "create F list:set size 8\nadd F A\n", "Name: A\nType: hash:ip\nNumber of entries: 0\n", "add S 1", ""} {
		f.Add(s)
	}
	a := netip.MustParseAddr
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseIPSets(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Col < 1 {
				t.Fatalf("error %v: want a *ParseError with a position", err)
			}
			return
		}
		for name := range s.Sets {
			s.Has(name, []string{"dst", "dst", "src"}, a("10.0.0.1"), a("10.96.0.10"), "tcp", 1, 80)
			s.Has(name, []string{"src"}, a("fd00::1"), a("fd00::2"), "udp", 1, 53)
		}
		saved := s.Save()
		b, err := ParseIPSets(saved)
		if err != nil {
			t.Fatalf("Save does not read back: %v\n%s", err, saved)
		}
		if !reflect.DeepEqual(shape(s), shape(b)) {
			t.Fatalf("Save reads back otherwise:\n%q\n%q", shape(s), shape(b))
		}
	})
}
