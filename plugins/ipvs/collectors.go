package ipvs

// The ipvs plane's dumps, by their names in a snapshot
// (snapshot.Dump.Collector).
const (
	// CollectorIPVS is the IPVS table: ipvsadm -Ln or ipvsadm-save -n.
	CollectorIPVS = "ipvsadm"
	// CollectorIPSet is the ipsets: ipset save (or ipset list).
	CollectorIPSet = "ipset"
	// CollectorKubeIPVS0 is the addresses on the kube-ipvs0 interface:
	// ip addr show dev kube-ipvs0 (or ip -j addr show).
	CollectorKubeIPVS0 = "kube-ipvs0"
)
