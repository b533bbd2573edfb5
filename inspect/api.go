package inspect

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// CollectAPI lists the objects kube-proxy acts on. namespace "" means all
// namespaces; Nodes are always listed cluster-wide. A forbidden list
// degrades to a note instead of failing, except for Services.
func CollectAPI(ctx context.Context, cs kubernetes.Interface, namespace string) (*snapshot.Cluster, []string, error) {
	c := &snapshot.Cluster{}
	var notes []string
	forbidden := func(what string, err error) bool {
		if apierrors.IsForbidden(err) {
			notes = append(notes, fmt.Sprintf("cannot list %s (forbidden by RBAC): checks that need them are skipped", what))
			return true
		}
		return false
	}
	// The lists are independent: they are made at once, and their
	// results read in a fixed order.
	var (
		wg                                       sync.WaitGroup
		svcs                                     *corev1.ServiceList
		slices                                   *discoveryv1.EndpointSliceList
		nodes                                    *corev1.NodeList
		pods                                     *corev1.PodList
		endpoints                                corev1.EndpointsList
		svcErr, sliceErr, nodeErr, podErr, epErr error
	)
	wg.Go(func() { svcs, svcErr = cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{}) })
	wg.Go(func() { slices, sliceErr = cs.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{}) })
	wg.Go(func() { nodes, nodeErr = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}) })
	wg.Go(func() { pods, podErr = cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}) })
	wg.Go(func() { endpoints, epErr = listEndpoints(ctx, cs, namespace) })
	wg.Wait()
	if svcErr != nil {
		return nil, nil, fmt.Errorf("listing services in %s: %w", nsName(namespace), svcErr)
	}
	c.Services = svcs.Items
	if sliceErr != nil && !forbidden("endpointslices", sliceErr) {
		return nil, nil, fmt.Errorf("listing endpointslices in %s: %w", nsName(namespace), sliceErr)
	} else if sliceErr == nil {
		c.EndpointSlices = slices.Items
	}
	if nodeErr != nil && !forbidden("nodes", nodeErr) {
		return nil, nil, fmt.Errorf("listing nodes: %w", nodeErr)
	} else if nodeErr == nil {
		c.Nodes = nodes.Items
	}
	if podErr != nil && !forbidden("pods", podErr) {
		return nil, nil, fmt.Errorf("listing pods in %s: %w", nsName(namespace), podErr)
	} else if podErr == nil {
		c.Pods = pods.Items
		c.PodsListed = true
	}
	switch {
	case epErr == nil:
		c.Endpoints = endpoints.Items
		c.EndpointsListed = true
	case forbidden("endpoints", epErr):
	case apierrors.IsNotFound(epErr):
		notes = append(notes, "the API server does not serve v1 Endpoints: only EndpointSlices are read")
	default:
		return nil, nil, fmt.Errorf("listing endpoints in %s: %w", nsName(namespace), epErr)
	}
	for i := range c.Services {
		c.Services[i].ManagedFields = nil
	}
	for i := range c.Endpoints {
		c.Endpoints[i].ManagedFields = nil
	}
	for i := range c.Pods {
		c.Pods[i].ManagedFields = nil
	}
	return c, notes, nil
}

// listEndpoints lists the v1 Endpoints objects. The API server answers
// every such list with a deprecation warning (v1.33 and later), which
// would be printed on each run: the list is made without warning handling
// where the client allows it.
func listEndpoints(ctx context.Context, cs kubernetes.Interface, namespace string) (corev1.EndpointsList, error) {
	var list corev1.EndpointsList
	if rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		err := rc.Get().Namespace(namespace).Resource("endpoints").
			WarningHandler(rest.NoWarnings{}).Do(ctx).Into(&list)
		return list, err
	}
	l, err := cs.CoreV1().Endpoints(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return list, err
	}
	return *l, nil
}

// ProxyConfigFromAPI reads kube-proxy's settings from the kube-proxy
// ConfigMap in kube-system (as kubeadm writes it), if it exists and may be
// read.
func ProxyConfigFromAPI(ctx context.Context, cs kubernetes.Interface) (snapshot.ProxyConfig, string, error) {
	// kubeadm, kind and AKS keep it in kube-proxy (config.conf); EKS's
	// add-on in kube-proxy-config (config), its kube-proxy ConfigMap
	// holding only a kubeconfig. k3s and RKE2 have none: their kube-proxy
	// takes flags.
	note := "no kube-proxy ConfigMap in kube-system (kube-proxy, or EKS's kube-proxy-config): kube-proxy settings are inferred from the rules"
	for _, name := range []string{"kube-proxy", "kube-proxy-config"} {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if apierrors.IsForbidden(err) {
			return snapshot.ProxyConfig{}, "cannot read the kube-proxy ConfigMap (forbidden): kube-proxy settings are inferred from the rules", nil
		}
		if err != nil {
			return snapshot.ProxyConfig{}, "", fmt.Errorf("reading configmap kube-system/%s: %w", name, err)
		}
		pc, found, err := proxyConfigFromConfigMap(cm)
		if err != nil || found {
			return pc, "", err
		}
		note = fmt.Sprintf("the ConfigMap kube-system/%s holds no KubeProxyConfiguration (config.conf, config): kube-proxy settings are inferred from the rules", name)
	}
	return snapshot.ProxyConfig{}, note, nil
}

// configMapKeys are the keys a ConfigMap holds kube-proxy's configuration
// under: kubeadm's config.conf, EKS's config, and others seen in the wild.
var configMapKeys = []string{"config.conf", "config.yaml", "kube-proxy.conf", "config"}

// proxyConfigFromConfigMap reads the KubeProxyConfiguration a ConfigMap
// holds; found false when it holds none.
func proxyConfigFromConfigMap(cm *corev1.ConfigMap) (pc snapshot.ProxyConfig, found bool, err error) {
	for _, key := range configMapKeys {
		if data, ok := cm.Data[key]; ok {
			pc, err := ParseKubeProxyConfiguration([]byte(data))
			if err != nil {
				return snapshot.ProxyConfig{}, true, fmt.Errorf("configmap kube-system/%s key %s: %w", cm.Name, key, err)
			}
			pc.Source = "configmap"
			return pc, true, nil
		}
	}
	return snapshot.ProxyConfig{}, false, nil
}

// ParseKubeProxyConfiguration reads the fields svctrace needs from a
// KubeProxyConfiguration document (v1alpha1; also the JSON of /configz).
func ParseKubeProxyConfiguration(data []byte) (snapshot.ProxyConfig, error) {
	var doc struct {
		Mode            string `json:"mode"`
		ClusterCIDR     string `json:"clusterCIDR"`
		DetectLocalMode string `json:"detectLocalMode"`
		DetectLocal     struct {
			BridgeInterface     string `json:"bridgeInterface"`
			InterfaceNamePrefix string `json:"interfaceNamePrefix"`
		} `json:"detectLocal"`
		NodePortAddresses []string `json:"nodePortAddresses"`
		IPTables          struct {
			MasqueradeAll      bool   `json:"masqueradeAll"`
			MasqueradeBit      *int32 `json:"masqueradeBit"`
			LocalhostNodePorts *bool  `json:"localhostNodePorts"`
		} `json:"iptables"`
	}
	// /configz wraps the configuration in {"kubeproxy.config.k8s.io": {...}}.
	var wrapped map[string]any
	if err := yaml.Unmarshal(data, &wrapped); err == nil {
		if inner, ok := wrapped["kubeproxy.config.k8s.io"]; ok {
			if b, err := yaml.Marshal(inner); err == nil {
				data = b
			}
		}
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return snapshot.ProxyConfig{}, fmt.Errorf("not a KubeProxyConfiguration: %v", err)
	}
	pc := snapshot.ProxyConfig{
		Mode: doc.Mode, DetectLocalMode: doc.DetectLocalMode,
		BridgeInterface: doc.DetectLocal.BridgeInterface, InterfaceNamePrefix: doc.DetectLocal.InterfaceNamePrefix,
		NodePortAddresses: doc.NodePortAddresses, MasqueradeAll: doc.IPTables.MasqueradeAll,
		MasqueradeBit: doc.IPTables.MasqueradeBit, LocalhostNodePorts: doc.IPTables.LocalhostNodePorts,
	}
	if pc.Mode == "" {
		pc.Mode = "iptables"
	}
	for _, c := range strings.Split(doc.ClusterCIDR, ",") {
		if c = strings.TrimSpace(c); c != "" {
			pc.ClusterCIDRs = append(pc.ClusterCIDRs, c)
		}
	}
	return pc, nil
}

func nsName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// ServiceAddrs are the addresses Services answer on (ClusterIPs, external
// IPs, load-balancer IPs) and the nodes' own (NodePorts): the original
// destinations of the conntrack entries svctrace reads.
func ServiceAddrs(c *snapshot.Cluster) []netip.Addr {
	if c == nil {
		return nil
	}
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, s := range c.Services {
		for _, ip := range s.Spec.ClusterIPs {
			add(ip)
		}
		for _, ip := range s.Spec.ExternalIPs {
			add(ip)
		}
		for _, in := range s.Status.LoadBalancer.Ingress {
			add(in.IP)
		}
	}
	for _, n := range c.Nodes {
		for _, a := range n.Status.Addresses {
			add(a.Address)
		}
	}
	return out
}
