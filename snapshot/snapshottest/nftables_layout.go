package snapshottest

// The fixed part of kube-proxy v1.36.3's nftables tables on a node with
// IPv4 addresses only, as node1 of examples/lab-nftables-v1.36.3.snapshot.yaml
// holds it (with that capture's handles).

// nftFamily is one of kube-proxy's tables: what differs between ip and
// ip6.
type nftFamily struct {
	name, addrType string
	tableHandle    int
	// sets are the handles of hairpin-connections, cluster-ips,
	// nodeport-ips (0: none, as in ip6 on a node without an IPv6
	// address), no-endpoint-services, no-endpoint-nodeports,
	// firewall-ips, service-ips and service-nodeports.
	sets   [8]int
	chains []nftChain
	rules  []nftRule
}

type nftChain struct {
	name, typ, hook string
	prio, handle    int
}

type nftRule struct {
	chain   string
	handle  int
	comment string
	expr    string
}

// Expressions kube-proxy's fixed rules are made of.
const (
	ctNew     = `{"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": "new"}}, `
	protoPort = `{"meta": {"key": "l4proto"}}, {"payload": {"protocol": "th", "field": "dport"}}`
	fullyRand = `, {"masquerade": {"flags": "fully-random"}}`
)

func jump(target string) string { return `{"jump": {"target": "` + target + `"}}` }

func field(family, f string) string {
	return `{"payload": {"protocol": "` + family + `", "field": "` + f + `"}}`
}

func vmapOf(key, set string) string {
	return `{"vmap": {"key": {"concat": [` + key + `]}, "data": "@` + set + `"}}`
}

func matchOp(op, left, right string) string {
	return `{"match": {"op": "` + op + `", "left": ` + left + `, "right": ` + right + `}}`
}

func mark(op string) string {
	return `{"mangle": {"key": {"meta": {"key": "mark"}}, "value": {"` + op + `": [{"meta": {"key": "mark"}}, 16384]}}}`
}

func reject(icmp string) string {
	return `{"reject": {"type": "` + icmp + `", "expr": "port-unreachable"}}`
}

// nftChains are the base and fixed regular chains, in the order nft lists
// them; rejectHandle is reject-chain's.
func nftChains(rejectHandle int) []nftChain {
	return []nftChain{
		{"filter-prerouting-pre-dnat", "filter", "prerouting", -110, 9},
		{"filter-output-pre-dnat", "filter", "output", -110, 10},
		{"filter-input", "filter", "input", 0, 11},
		{"filter-forward", "filter", "forward", 0, 12},
		{"filter-output", "filter", "output", 0, 13},
		{"nat-prerouting", "nat", "prerouting", -100, 14},
		{"nat-output", "nat", "output", -100, 15},
		{"nat-postrouting", "nat", "postrouting", 100, 16},
		{name: "nodeport-endpoints-check", handle: 17},
		{name: "service-endpoints-check", handle: 19},
		{name: "firewall-check", handle: 23},
		{name: "services", handle: 26},
		{name: "masquerading", handle: 29},
		{name: "cluster-ips-check", handle: 31},
		{name: "reject-chain", handle: rejectHandle},
	}
}

// baseRules are the rules of the base chains, the same in both tables, h
// their handles in order.
func baseRules(h [11]int) []nftRule {
	return []nftRule{
		{"filter-prerouting-pre-dnat", h[0], "", ctNew + jump("firewall-check")},
		{"filter-output-pre-dnat", h[1], "", ctNew + jump("firewall-check")},
		{"filter-input", h[2], "", ctNew + jump("nodeport-endpoints-check")},
		{"filter-input", h[3], "", ctNew + jump("service-endpoints-check")},
		{"filter-forward", h[4], "", ctNew + jump("service-endpoints-check")},
		{"filter-forward", h[5], "", ctNew + jump("cluster-ips-check")},
		{"filter-output", h[6], "", ctNew + jump("service-endpoints-check")},
		{"filter-output", h[7], "", ctNew + jump("cluster-ips-check")},
		{"nat-prerouting", h[8], "", jump("services")},
		{"nat-output", h[9], "", jump("services")},
		{"nat-postrouting", h[10], "", jump("masquerading")},
	}
}

// masqueradingRules are masquerading's two rules in family f: the marked
// packets, and a pod reaching itself through its Service.
func masqueradingRules(f string, h1, h2 int) []nftRule {
	tuple := `{"concat": [` + field(f, "saddr") + ", " + field(f, "daddr") + ", " + protoPort + `]}`
	return []nftRule{
		{"masquerading", h1, "", matchOp("!=", `{"&": [{"meta": {"key": "mark"}}, 16384]}`, "0") + ", " + mark("^") + fullyRand},
		{"masquerading", h2, "", matchOp("in", `{"ct": {"key": "status"}}`, `"dnat"`) + ", " + matchOp("==", tuple, `"@hairpin-connections"`) + fullyRand},
	}
}

// nftIP is the ip table: NodePorts on the addresses of nodeport-ips,
// off-cluster clients of a ClusterIP marked for masquerading, unallocated
// ClusterIPs of the Service CIDR dropped.
func nftIP() nftFamily {
	daddr, addrKey := field("ip", "daddr"), field("ip", "daddr")+", "+protoPort
	rules := baseRules([11]int{61, 62, 57, 58, 59, 66, 60, 67, 64, 63, 65})
	rules = append(rules,
		nftRule{"nodeport-endpoints-check", 74, "", matchOp("==", daddr, `"@nodeport-ips"`) + ", " + vmapOf(protoPort, "no-endpoint-nodeports")},
		nftRule{"service-endpoints-check", 73, "", vmapOf(addrKey, "no-endpoint-services")},
		nftRule{"firewall-check", 75, "", vmapOf(addrKey, "firewall-ips")},
		nftRule{"services", 76, "masquerade clusterIP traffic from outside cluster", matchOp("==", daddr, `"@cluster-ips"`) + ", " +
			matchOp("!=", field("ip", "saddr"), `{"prefix": {"addr": "10.244.0.0", "len": 16}}`) + ", " + mark("|")},
		nftRule{"services", 77, "", vmapOf(addrKey, "service-ips")},
		nftRule{"services", 78, "", matchOp("==", daddr, `"@nodeport-ips"`) + ", " + vmapOf(protoPort, "service-nodeports")})
	rules = append(rules, masqueradingRules("ip", 68, 69)...)
	rules = append(rules,
		nftRule{"cluster-ips-check", 70, "Reject traffic to invalid ports of ClusterIPs", matchOp("==", daddr, `"@cluster-ips"`) + ", " + reject("icmp")},
		nftRule{"cluster-ips-check", 71, "Drop traffic to unallocated ClusterIPs", matchOp("==", daddr, `{"prefix": {"addr": "10.96.0.0", "len": 16}}`) + `, {"drop": null}`},
		nftRule{"reject-chain", 72, "", reject("icmp")})
	return nftFamily{name: "ip", addrType: "ipv4_addr", tableHandle: 3,
		sets: [8]int{34, 37, 40, 41, 42, 47, 49, 50}, chains: nftChains(43), rules: rules}
}

// nftIP6 is the ip6 table of a node without an IPv6 address: no
// nodeport-ips set, so NodePorts on every local address but ::1; no
// Service CIDR of the family, so no drop rule.
func nftIP6() nftFamily {
	daddr, addrKey := field("ip6", "daddr"), field("ip6", "daddr")+", "+protoPort
	notLoopback := matchOp("!=", daddr, `"::1"`)
	rules := baseRules([11]int{56, 57, 52, 53, 54, 61, 55, 62, 59, 58, 60})
	rules = append(rules,
		nftRule{"nodeport-endpoints-check", 69, "", notLoopback + ", " + vmapOf(protoPort, "no-endpoint-nodeports")},
		nftRule{"service-endpoints-check", 68, "", vmapOf(addrKey, "no-endpoint-services")},
		nftRule{"firewall-check", 70, "", vmapOf(addrKey, "firewall-ips")},
		nftRule{"services", 71, "", vmapOf(addrKey, "service-ips")},
		nftRule{"services", 72, "", matchOp("==", `{"fib": {"result": "type", "flags": ["daddr"]}}`, `"local"`) + ", " + notLoopback + ", " + vmapOf(protoPort, "service-nodeports")})
	rules = append(rules, masqueradingRules("ip6", 63, 64)...)
	rules = append(rules,
		nftRule{"cluster-ips-check", 65, "Reject traffic to invalid ports of ClusterIPs", matchOp("==", daddr, `"@cluster-ips"`) + ", " + reject("icmpv6")},
		nftRule{"reject-chain", 67, "", reject("icmpv6")})
	return nftFamily{name: "ip6", addrType: "ipv6_addr", tableHandle: 4,
		sets: [8]int{34, 37, 0, 40, 41, 46, 48, 49}, chains: nftChains(42), rules: rules}
}
