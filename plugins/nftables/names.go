package nftables

import "strings"

// Kube-proxy's published names (pkg/proxy/nftables): the maps and sets of
// its table, and the prefixes of its per-service-port chains and sets,
// "<prefix>HASH8-ns/name/proto/portName[__epIP/epPort]".
const (
	mapServiceIPs          = "service-ips"
	mapServiceNodePorts    = "service-nodeports"
	mapNoEndpointServices  = "no-endpoint-services"
	mapNoEndpointNodePorts = "no-endpoint-nodeports"
	mapFirewallIPs         = "firewall-ips"
	setClusterIPs          = "cluster-ips"

	prefixService  = "service-"
	prefixLocal    = "local-"
	prefixExternal = "external-"
	prefixFirewall = "firewall-"
	prefixEndpoint = "endpoint-"
	prefixAffinity = "affinity-"
)

// perServicePrefix returns the per-service chain prefix of name, "" if it
// has none. Fixed chains such as "services" or "service-endpoints-check"
// have no hash part and do not count.
func perServicePrefix(name string) string {
	for _, p := range []string{prefixService, prefixLocal, prefixExternal, prefixFirewall, prefixEndpoint, prefixAffinity} {
		if strings.HasPrefix(name, p) && hashed(name[len(p):]) {
			return p
		}
	}
	return ""
}

// hashed reports whether s is "HASH8-base" with a base holding a "/".
func hashed(s string) bool {
	if len(s) < 10 || s[8] != '-' || !strings.Contains(s[9:], "/") {
		return false
	}
	for _, r := range s[:8] {
		if !(r >= 'A' && r <= 'Z' || r >= '2' && r <= '7') {
			return false
		}
	}
	return true
}

// SPNFromName reads the ServicePortName ("ns/name:port", or "ns/name" for
// an unnamed port) and protocol off a per-service chain or set name.
func SPNFromName(name string) (spn, proto string, ok bool) {
	p := perServicePrefix(name)
	if p == "" {
		return "", "", false
	}
	base := name[len(p)+9:]
	if i := strings.Index(base, "__"); i >= 0 {
		base = base[:i]
	}
	if strings.Count(base, "/") != 3 || strings.HasSuffix(base, "...") {
		return "", "", false
	}
	ns, rest, _ := strings.Cut(base, "/")
	svc, rest, _ := strings.Cut(rest, "/")
	proto, port, _ := strings.Cut(rest, "/")
	if ns == "" || svc == "" {
		return "", "", false
	}
	spn = base[:len(ns)+1+len(svc)]
	if port != "" {
		spn += ":" + port
	}
	return spn, proto, true
}

// looksLikeSPN reports whether a comment is a ServicePortName.
func looksLikeSPN(s string) bool {
	ns, rest, ok := strings.Cut(s, "/")
	return ok && ns != "" && rest != "" && !strings.ContainsAny(s, " \t")
}
