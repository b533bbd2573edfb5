package analysis

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// ProxyVersion is the version of the node's kube-proxy and what told it:
// kube-proxy itself (its /metrics, as collected), else the image of its
// Pod on the node (a kubeadm or EKS DaemonSet, an RKE2 static Pod), else
// the node's kubelet when it is k3s's or RKE2's, which run kube-proxy in
// their own process at their own version. Both "" when none tells.
func ProxyVersion(s *snapshot.Snapshot, node string) (version, source string) {
	if ns, ok := s.Node(node); ok && ns.KubeProxy.Version != "" {
		return ns.KubeProxy.Version, "the node's kube-proxy"
	}
	if s.Cluster == nil {
		return "", ""
	}
	if v, src := podVersion(s.Cluster, node); v != "" {
		return v, src
	}
	for i := range s.Cluster.Nodes {
		n := &s.Cluster.Nodes[i]
		if n.Name != node {
			continue
		}
		if v := n.Status.NodeInfo.KubeletVersion; strings.Contains(v, "+k3s") || strings.Contains(v, "+rke2") {
			return v, "the kubelet of node " + node + " (k3s and RKE2 run kube-proxy at their own version)"
		}
	}
	return "", ""
}

// podVersion is the version in the image of the node's kube-proxy Pod:
// a container named kube-proxy, or an image named kube-proxy, whose tag
// starts with a v1 version ("v1.30.0-minimal-eksbuild.3" and
// "v1.30.5-gke.1014001" are read as v1.30.0 and v1.30.5 by the release
// model); RKE2's hardened-kubernetes image ("v1.30.4-rke2r1-build...")
// runs kube-proxy as its kube-proxy container.
func podVersion(c *snapshot.Cluster, node string) (string, string) {
	for _, pod := range c.Pods {
		if pod.Spec.NodeName != node || pod.Namespace != "kube-system" {
			continue
		}
		for _, ctr := range pod.Spec.Containers {
			if ctr.Name != "kube-proxy" && !strings.Contains(ctr.Image, "/kube-proxy:") {
				continue
			}
			if _, tag, ok := strings.Cut(ctr.Image[strings.LastIndex(ctr.Image, "/")+1:], ":"); ok && strings.HasPrefix(tag, "v1.") {
				tag, _, _ = strings.Cut(tag, "@")
				return tag, "the image of Pod kube-system/" + pod.Name
			}
		}
	}
	return "", ""
}

// nodeRelease is the release model of the node's kube-proxy.
func nodeRelease(s *snapshot.Snapshot, node string) proxyrelease.Release {
	v, _ := ProxyVersion(s, node)
	return proxyrelease.For(v)
}

// topologyOf is how the release reads topology hints.
func topologyOf(r proxyrelease.Release) model.Topology {
	return model.Topology{ZoneHintsNeedAnnotation: r.ZoneHintsNeedAnnotation(), NodeHints: r.NodeHints()}
}

// releaseNotes say what the analysis assumed of kube-proxy's release: the
// nearest model for a version outside the window, always; the newest for
// an unknown version, where the view has a Service whose endpoints another
// release would pick otherwise.
func releaseNotes(r proxyrelease.Release, v *model.NodeView, mode string) []string {
	if r.Outside != "" {
		return []string{r.Outside}
	}
	if r.Known() || v == nil {
		return nil
	}
	early := plugins.TraitsOf(mode).EarlyEndpointCheck
	var hinted, dropped []string
	add := func(list []string, name string) []string {
		if len(list) == 0 || list[len(list)-1] != name {
			list = append(list, name)
		}
		return list
	}
	for i := range v.Ports {
		p := &v.Ports[i]
		name := p.Namespace + "/" + p.Name
		if p.TopologyByRelease {
			hinted = add(hinted, name)
		}
		if early && p.ExternalPolicyLocal && len(p.LocalEndpoints) == 0 && p.HasAnyEndpoints &&
			(len(p.ExternalIPs) > 0 || len(p.LoadBalancerIPs) > 0) {
			dropped = add(dropped, name)
		}
	}
	var notes []string
	if len(hinted) > 0 {
		notes = append(notes, fmt.Sprintf("kube-proxy's version is not known: the topology hints of %s are read as %s does (v1.30 uses zone hints only with the topology-mode annotation, v1.33 and older ignore node hints); give --kube-proxy-version if the node runs an older release",
			listSome(hinted, 3), r))
	}
	if len(dropped) > 0 {
		notes = append(notes, fmt.Sprintf("kube-proxy's version is not known: the node's own connections to the external and load balancer IPs of %s (Local policy, no endpoint on the node) are expected to reach the cluster's endpoints, as from v1.33.6 on; v1.31 to v1.33.5 drop them; give --kube-proxy-version if the node runs an older release",
			listSome(dropped, 3)))
	}
	return notes
}

// listSome joins the first n names, counting the rest.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + " and " + wording.Count(len(names)-n, "other", "others")
}
