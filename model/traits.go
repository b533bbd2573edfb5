package model

// ProxierTraits are the ways the proxier of one kube-proxy mode departs
// from the behaviour the expected table assumes by default (iptables
// mode's). The plane of the mode declares them (dataplane.Declarer), and
// the expected table, the diagnosis and the settings check follow them
// without naming a mode. The zero value, with Mode set, is iptables
// mode's behaviour.
type ProxierTraits struct {
	// Mode is kube-proxy's name of the mode.
	Mode string
	// DefaultNodePortAddresses is what kube-proxy takes for an unset
	// nodePortAddresses (nil: every local address).
	DefaultNodePortAddresses []string
	// NodePortsListedByPlane: NodePorts open on every address of the node
	// but the ones the mode puts on its own interface (ipvs mode's
	// kube-ipvs0), and the plane lists the addresses it opens them on.
	NodePortsListedByPlane bool
	// LocalFallback: a Local traffic policy with no endpoint on the node
	// sends to the cluster-wide endpoints instead of dropping.
	LocalFallback bool
	// EmptyFrontend says what answers a connection to a frontend with no
	// endpoint to send to, when that is not kube-proxy's reject rule
	// (ipvs mode: "its IPVS virtual server has no real server").
	EmptyFrontend string
	// ExternalMasqueradeByPolicy: external traffic (NodePort, external IP,
	// load balancer) is masqueraded from every source under policy
	// Cluster and from none under Local, whatever the local-traffic
	// detector says.
	ExternalMasqueradeByPolicy bool
	// InterfaceMatchSkipsNode: a local-traffic detector that goes by input
	// interface does not match the node's own packets at all (nft's
	// iifname), where iptables' "! -i" takes them as not local.
	InterfaceMatchSkipsNode bool
	// EarlyEndpointCheck: the releases that proxyrelease names
	// (Release.NFTablesChecksEndpointsBeforeDNAT) check the node's own
	// connections to an external or load balancer IP of a Service with a
	// Local policy and no endpoint on the node before DNAT, and drop them.
	EarlyEndpointCheck bool
}
