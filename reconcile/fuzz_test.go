package reconcile

import (
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// iptablesLine is every line a repair's restore payload may hold: a table
// of kube-proxy's, a KUBE- chain declared or deleted, a rule added,
// inserted or deleted in a KUBE- chain or a built-in one, or COMMIT.
var iptablesLine = regexp.MustCompile(`^(\*(filter|nat|mangle)|COMMIT|:KUBE-[A-Z0-9-]+ - \[0:0\]|-X KUBE-[A-Z0-9-]+|-[AD] (KUBE-[A-Z0-9-]+|PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) .+|-I (KUBE-[A-Z0-9-]+|PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) 1 .+)$`)

// nftLine is every line a repair's nft script may hold: a command on
// kube-proxy's table of a family.
var nftLine = regexp.MustCompile(`^(add|delete|flush) (table|chain|rule|set|map|element) ip6? kube-proxy( .+)?$`)

// FuzzRenderRoundTrip feeds hostile Service names, namespaces, port
// names, cluster IPs, ports, endpoint addresses and interface names to a
// plan, in iptables and nftables mode: the plan refuses them as invalid
// values, or its payload touches only kube-proxy's chains and tables. The
// planner reads each payload back with its plane's own reading before it
// shows it; a refusal there means the renderer wrote what it did not mean
// to, and fails the test too.
func FuzzRenderRoundTrip(f *testing.F) {
	type seed struct {
		name, namespace, portName, clusterIP string
		port                                 int32
		endpoint, iface                      string
		prefix, nft                          bool
	}
	const inject = "eth0+ -j ACCEPT\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n#"
	const nftInject = "\"; }\ntable ip evil { chain c { type filter hook input priority 0; accept; } }\n#"
	for _, nft := range []bool{false, true} {
		for _, s := range []seed{
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7", "veth", true, nft},
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7", "cni0", false, nft},
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7", inject, true, nft},
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7", nftInject, false, nft},
			{"web\"\n-A INPUT -j ACCEPT", "default", "http", "10.96.0.9", 80, "10.244.0.7", "", false, nft},
			{"web", "def\"ault", "ht\ntp", "10.96.0.9", 80, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9/32 -j ACCEPT", 80, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9", 0, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9", 65536, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9", -1, "10.244.0.7", "", false, nft},
			{"web", "default", "http", "10.96.0.9", 80, "10.244.0.7%eth0", "", false, nft},
			{"web", "default", "http", "fe80::1%eth0", 80, "10.244.0.7", "", false, nft},
		} {
			f.Add(s.name, s.namespace, s.portName, s.clusterIP, s.port, s.endpoint, s.iface, s.prefix, s.nft)
		}
	}
	f.Fuzz(func(t *testing.T, name, namespace, portName, clusterIP string, port int32, endpoint, iface string, prefix, nft bool) {
		s := hostileSnapshot(name, namespace, portName, clusterIP, port, endpoint, iface, prefix, nft)
		p, err := PlanRules(s, RulesOptions{Node: "node1", KubeProxyVersion: "v1.36.3"})
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "refusing to") {
				t.Fatalf("not a refusal: %v", err)
			}
			if readBackRefusal.MatchString(msg) {
				t.Fatalf("the payload did not read back as rendered: %v", err)
			}
			return
		}
		for _, fp := range p.Families {
			if fp.Payload == "" {
				continue
			}
			line := iptablesLine
			if nft {
				line = nftLine
			}
			for _, l := range strings.Split(strings.TrimSuffix(fp.Payload, "\n"), "\n") {
				if !line.MatchString(l) {
					t.Fatalf("%s: payload line %q touches what is not kube-proxy's:\n%s", fp.Family, l, fp.Payload)
				}
			}
		}
	})
}

// readBackRefusal is the refusal of a plane's read-back of its payload
// (iptables' CheckPayload, nftables' CheckScript), as against one of the
// values' validation.
var readBackRefusal = regexp.MustCompile(`(^|: )the (restore payload|nft script)`)

// hostileSnapshot is a healthy node of one Service, in iptables or
// nftables mode, whose Service, endpoint and local-traffic detector are
// given the values.
func hostileSnapshot(name, namespace, portName, clusterIP string, port int32, endpoint, iface string, prefix, nft bool) *snapshot.Snapshot {
	s := snapshottest.Node(1, 2)
	if nft {
		s = snapshottest.NodeNFTables(1, 2)
	}
	svc := &s.Cluster.Services[0]
	es := &s.Cluster.EndpointSlices[0]
	svc.Name, svc.Namespace, es.Namespace = name, namespace, namespace
	es.Labels["kubernetes.io/service-name"] = name
	svc.Spec.Ports[0].Name, es.Ports[0].Name = portName, &portName
	svc.Spec.Ports[0].Port = port
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs[0] = clusterIP, clusterIP
	es.Endpoints[0].Addresses[0] = endpoint
	cfg := &s.Nodes[0].KubeProxy
	switch {
	case iface != "" && prefix:
		cfg.DetectLocalMode, cfg.InterfaceNamePrefix = "InterfaceNamePrefix", iface
	case iface != "":
		cfg.DetectLocalMode, cfg.BridgeInterface = "BridgeInterface", iface
	}
	return s
}
