package snapshottest

import (
	"crypto/sha256"
	"encoding/base32"
	"slices"
	"strconv"

	"github.com/svctrace/svctrace/snapshot"
)

// NodeNFTables is Node with kube-proxy in nftables mode: the same API
// objects, and node1's `nft -j list ruleset` in kube-proxy v1.36.3's
// layout for them (NFTablesJSON) instead of its iptables-save. A healthy
// node: drift finds nothing.
func NodeNFTables(services, endpoints int) *snapshot.Snapshot {
	s := Node(services, endpoints)
	n := &s.Nodes[0]
	n.KubeProxy = snapshot.ProxyConfig{Mode: "nftables", Version: "v1.36.3", ClusterCIDRs: []string{"10.244.0.0/16"},
		NodePortAddresses: []string{"primary"}, Source: "flags"}
	n.Dumps = []snapshot.Dump{{Collector: "nft-json", Origin: "nft -j list ruleset",
		Text: NFTablesJSON(services, endpoints)}}
	return s
}

// NFTablesJSON writes what `nft -j list ruleset` prints on node1 of Node's
// cluster when kube-proxy v1.36.3 runs in nftables mode (compare node1 of
// examples/lab-nftables-v1.36.3.snapshot.yaml and
// testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.json): the tables ip and
// ip6 kube-proxy with their fixed sets, maps and chains (nodePortAddresses
// primary, so nodeport-ips holds Node1IP; Service CIDR 10.96.0.0/16), every
// ClusterIP in cluster-ips, a service-ips element per Service, and per
// Service a chain service-HASH-ns/name/tcp/http that DNATs straight to its
// endpoints with `numgen random mod N` (1.36 writes endpoint chains only
// under ClientIP affinity). The endpoints are on node2, so
// hairpin-connections is empty. A Service without endpoints gets a
// no-endpoint-services element instead of a chain. Chain hashes are
// kube-proxy's (ServiceChainNFT); handles are made up, unique per table.
func NFTablesJSON(services, endpoints int) string {
	b := make([]byte, 0, 16<<10+services*(700+endpoints*48))
	b = append(b, `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}`...)
	b = appendTable(b, nftIP(), services, endpoints)
	b = appendTable(b, nftIP6(), 0, 0)
	return string(append(b, "]}\n"...))
}

// ServiceChainNFT is the service-… chain of Service s in nftables mode.
func ServiceChainNFT(s int) string {
	return "service-" + nftHashed("ns-"+strconv.Itoa(s%97)+"/svc-"+strconv.Itoa(s)+"/tcp/http")
}

// nftHashed is kube-proxy's name for the chains and sets of base
// ("ns/name/proto/port[__IP/port]"): the first 8 base32 characters of
// its SHA-256, "-", and base (never over 240 characters here).
func nftHashed(base string) string {
	sum := sha256.Sum256([]byte(base))
	return base32.StdEncoding.EncodeToString(sum[:5]) + "-" + base
}

// perServiceHandle is the first handle of the per-Service objects, past
// every fixed one.
const perServiceHandle = 100

// appendTable writes one kube-proxy table of family f, with services
// Services of endpoints endpoints each.
func appendTable(b []byte, f nftFamily, services, endpoints int) []byte {
	b = append(b, `, {"table": {"family": "`+f.name+`", "name": "kube-proxy", "handle": `...)
	b = append(strconv.AppendInt(b, int64(f.tableHandle), 10), "}}"...)
	chains := make([]string, services)
	for s := range chains {
		chains[s] = ServiceChainNFT(s)
	}
	addr, svc := `"`+f.addrType+`"`, `"inet_proto", "inet_service"`
	b = appendSet(b, f, "set", "hairpin-connections", "["+addr+", "+addr+", "+svc+"]", f.sets[0], "service hairpin connections", nil)
	b = appendSet(b, f, "set", "cluster-ips", addr, f.sets[1], "Active ClusterIPs", func(b []byte) []byte {
		for s := range services {
			b = append(appendAddr(append(b, '"'), ClusterIPBase+uint32(s+10)), `", `...)
		}
		return b
	})
	if f.sets[2] != 0 {
		b = appendSet(b, f, "set", "nodeport-ips", addr, f.sets[2], "IPs that accept NodePort traffic", func(b []byte) []byte {
			return append(b, `"`+Node1IP+`", `...)
		})
	}
	key := "[" + addr + ", " + svc + "]"
	b = appendSet(b, f, "map", "no-endpoint-services", key, f.sets[3], "vmap to drop or reject packets to services with no endpoints", func(b []byte) []byte {
		for s := 0; s < services && endpoints <= 0; s++ {
			b = append(appendAddr(append(b, `[{"elem": {"val": {"concat": ["`...), ClusterIPBase+uint32(s+10)), `", "tcp", 80]}, "comment": "`...)
			b = append(b, `ns-`...)
			b = append(strconv.AppendInt(b, int64(s%97), 10), "/svc-"...)
			b = append(strconv.AppendInt(b, int64(s), 10), `:http"}}, {"goto": {"target": "reject-chain"}}], `...)
		}
		return b
	})
	b = appendSet(b, f, "map", "no-endpoint-nodeports", "["+svc+"]", f.sets[4], "vmap to drop or reject packets to service nodeports with no endpoints", nil)
	b = appendSet(b, f, "map", "firewall-ips", key, f.sets[5], "destinations that are subject to LoadBalancerSourceRanges", nil)
	b = appendSet(b, f, "map", "service-ips", key, f.sets[6], "ClusterIP, ExternalIP and LoadBalancer IP traffic", func(b []byte) []byte {
		for s := 0; s < services && endpoints > 0; s++ {
			b = append(appendAddr(append(b, `[{"concat": ["`...), ClusterIPBase+uint32(s+10)), `", "tcp", 80]}, {"goto": {"target": "`...)
			b = append(append(b, chains[s]...), `"}}], `...)
		}
		return b
	})
	b = appendSet(b, f, "map", "service-nodeports", "["+svc+"]", f.sets[7], "NodePort traffic", nil)
	for _, c := range f.chains {
		b = appendObject(b, f, "chain", "name", c.name, c.handle)
		if c.hook != "" {
			b = append(b, `, "type": "`+c.typ+`", "hook": "`+c.hook+`", "prio": `+strconv.Itoa(c.prio)+`, "policy": "accept"`...)
		}
		b = append(b, "}}"...)
	}
	for s := 0; s < services && endpoints > 0; s++ {
		b = append(appendObject(b, f, "chain", "name", chains[s], perServiceHandle+3*s), "}}"...)
	}
	for _, r := range f.rules {
		b = appendObject(b, f, "rule", "chain", r.chain, r.handle)
		if r.comment != "" {
			b = append(b, `, "comment": "`+r.comment+`"`...)
		}
		b = append(b, `, "expr": [`+r.expr+"]}}"...)
	}
	eps := make([]string, endpoints)
	for s := 0; s < services && endpoints > 0; s++ {
		// The numgen index follows kube-proxy's endpoint order: by
		// "IP:port", as strings.
		for e := range eps {
			eps[e] = IP(PodIPBase, s*endpoints+e) + ":8080"
		}
		slices.Sort(eps)
		b = appendObject(b, f, "rule", "chain", chains[s], perServiceHandle+3*s+2)
		b = append(b, `, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "l4proto"}}, "right": "tcp"}}, {"dnat": {"family": "ip", "addr": {"map": {"key": {"numgen": {"mode": "random", "mod": `...)
		b = append(strconv.AppendInt(b, int64(endpoints), 10), `, "offset": 0}}, "data": {"set": [`...)
		for i, ep := range eps {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(strconv.AppendInt(append(b, '['), int64(i), 10), `, {"concat": ["`...)
			b = append(append(b, ep[:len(ep)-len(":8080")]...), `", 8080]}]`...)
		}
		b = append(b, "]}}}}}]}}"...)
	}
	return b
}

// appendObject opens `, {"kind": {"family": F, "table": "kube-proxy",
// "nameKey": name, "handle": h` (a chain or a rule).
func appendObject(b []byte, f nftFamily, kind, nameKey, name string, h int) []byte {
	b = append(b, `, {"`+kind+`": {"family": "`+f.name+`", "table": "kube-proxy", "`+nameKey+`": "`...)
	b = append(append(b, name...), `", "handle": `...)
	return strconv.AppendInt(b, int64(h), 10)
}

// appendSet writes a set or map; elems, when not nil, appends its elements
// each followed by ", " (no element: no "elem" key, as nft prints it).
func appendSet(b []byte, f nftFamily, kind, name, typ string, h int, comment string, elems func([]byte) []byte) []byte {
	b = append(b, `, {"`+kind+`": {"family": "`+f.name+`", "name": "`+name+`", "table": "kube-proxy", "type": `+typ+`, "handle": `...)
	b = append(strconv.AppendInt(b, int64(h), 10), `, "comment": "`+comment+`"`...)
	if kind == "map" {
		b = append(b, `, "map": "verdict"`...)
	}
	if elems != nil {
		start := len(b)
		b = elems(append(b, `, "elem": [`...))
		if len(b) == start+len(`, "elem": [`) {
			b = b[:start]
		} else {
			b = append(b[:len(b)-2], ']')
		}
	}
	return append(b, "}}"...)
}

// appendAddr writes the IPv4 address v in dotted form.
func appendAddr(b []byte, v uint32) []byte {
	for i := 3; i >= 0; i-- {
		b = strconv.AppendUint(b, uint64(v>>(8*i)&255), 10)
		if i > 0 {
			b = append(b, '.')
		}
	}
	return b
}
