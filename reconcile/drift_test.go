package reconcile_test

import (
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/reconcile"
)

const fixture = "../testdata/kube-proxy-v1.36.3/two-nodes/"

// scenario changes the API objects (as if kube-proxy were stopped while
// they changed) or the kernel's rules, and names the findings it must give.
type scenario struct {
	name   string
	api    func(c *inspect.Cluster)
	kernel func(dump string) string
	want   []string // "Type service expected|observed"
}

func TestDriftScenarios(t *testing.T) {
	for _, sc := range []scenario{
		{name: "healthy"},
		{
			name: "endpoint removed from the API",
			api: func(c *inspect.Cluster) {
				s := slice(c, "default", "nginx-abc")
				s.Endpoints = []discoveryv1.Endpoint{s.Endpoints[0], s.Endpoints[2]}
			},
			want: []string{"StaleEndpoint default/nginx:http absent|10.244.0.6:8080"},
		},
		{
			name: "service deleted",
			api:  func(c *inspect.Cluster) { deleteService(c, "default", "nginx") },
			want: []string{"StaleFrontend default/nginx:http no frontend|"},
		},
		{
			name: "service added",
			api: func(c *inspect.Cluster) {
				svc := service(c, "default", "nginx").DeepCopy()
				svc.Name, svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "nginx2", "10.96.7.7", []string{"10.96.7.7"}
				c.Services = append(c.Services, *svc)
				es := slice(c, "default", "nginx-abc").DeepCopy()
				es.Name, es.Labels["kubernetes.io/service-name"] = "nginx2-x", "nginx2"
				c.EndpointSlices = append(c.EndpointSlices, *es)
			},
			want: []string{"MissingFrontend default/nginx2:http forward"},
		},
		{
			name: "port changed",
			api:  func(c *inspect.Cluster) { service(c, "default", "nginx").Spec.Ports[0].Port = 81 },
			want: []string{"MissingFrontend default/nginx:http forward", "StaleFrontend default/nginx:http no frontend|"},
		},
		{
			name: "affinity turned on",
			api: func(c *inspect.Cluster) {
				s := service(c, "default", "nginx")
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			},
			want: []string{"AffinityMismatch default/nginx:http ClientIP 10800s|none"},
		},
		{
			name: "source range changed",
			api: func(c *inspect.Cluster) {
				service(c, "shop", "cart").Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
			},
			// The node's own address is now allowed; the old range is not.
			want: []string{
				"FirewallMismatch shop/cart:http 192.0.2.0/24|203.0.113.0/24",
				"FirewallMismatch shop/cart:metrics 192.0.2.0/24|203.0.113.0/24",
			},
		},
		{
			name: "endpoint appears for a service the kernel rejects",
			api: func(c *inspect.Cluster) {
				es := slice(c, "default", "nginx-abc").DeepCopy()
				es.Name, es.Labels["kubernetes.io/service-name"] = "web-np-1", "web-np"
				es.Endpoints = es.Endpoints[:1]
				c.EndpointSlices = append(c.EndpointSlices, *es)
			},
			want: []string{"NoEndpointsRuleMismatch default/web-np:http forward"},
		},
		{
			name: "external traffic policy changed to Cluster",
			api: func(c *inspect.Cluster) {
				s := service(c, "shop", "cart")
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
				s.Spec.HealthCheckNodePort = 0
			},
			want: []string{"LocalPolicyMismatch shop/cart:http Cluster", "LocalPolicyMismatch shop/cart:metrics Cluster"},
		},
		{
			name:   "masquerade rule deleted in the kernel",
			kernel: dropLine(`-A KUBE-SVC-P4Q3KNUAWJVP4ILH ! -s 10.244.0.0/16`),
			want:   []string{"MasqueradeMismatch default/nginx:http masqueraded|not masqueraded"},
		},
		{
			name:   "probability changed in the kernel",
			kernel: replace("--probability 0.33333333349 -j KUBE-SEP-DFWPZSRRP22P56ON", "--probability 0.50000000000 -j KUBE-SEP-DFWPZSRRP22P56ON"),
			want:   []string{"WeightMismatch default/nginx:http 10.244.0.5:8080@1/3"},
		},
		{
			name:   "SEP jump deleted in the kernel",
			kernel: dropLine(`-A KUBE-SVC-P4Q3KNUAWJVP4ILH -m comment --comment "default/nginx:http -> 10.244.0.5:8080"`),
			want:   []string{"MissingEndpoint default/nginx:http 10.244.0.5:8080|absent"},
		},
		{
			name:   "service rule deleted in the kernel",
			kernel: dropLine(`-A KUBE-SERVICES -d 10.96.94.233/32`),
			want:   []string{"MissingFrontend default/nginx:http forward"},
		},
		{
			name:   "leftover IPVS chain",
			kernel: replace(":KUBE-MARK-MASQ - [0:0]", ":KUBE-MARK-MASQ - [0:0]\n:KUBE-LOAD-BALANCER - [0:0]"),
			want:   []string{"LeftoverRules  no chain|nat chain KUBE-LOAD-BALANCER (IPVS mode)"},
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			got := analyze(t, sc)
			sort.Strings(sc.want)
			if len(got) != len(sc.want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(sc.want), describe(got))
			}
			for i, w := range sc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("finding %d:\n got %s\nwant %s...", i, got[i], w)
				}
			}
		})
	}
}

func analyze(t *testing.T, sc scenario) []string {
	t.Helper()
	a := analyzeScenario(t, sc)
	var out []string
	for _, f := range a.Findings {
		out = append(out, key(f))
	}
	sort.Strings(out)
	return out
}

// analyze2 analyses node1 of the capture after an API change.
func analyze2(t testing.TB, api func(c *inspect.Cluster)) *reconcile.NodeAnalysis {
	t.Helper()
	return analyzeScenario(t, scenario{api: api})
}

func analyzeScenario(t testing.TB, sc scenario) *reconcile.NodeAnalysis {
	t.Helper()
	data, err := os.ReadFile(fixture + "objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := model.DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	if sc.api != nil {
		sc.api(c)
	}
	dump, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(dump)
	if sc.kernel != nil {
		text = sc.kernel(text)
		if text == string(dump) {
			t.Fatal("kernel mutation changed nothing")
		}
	}
	s := &inspect.Snapshot{APIVersion: inspect.APIVersion, Kind: inspect.Kind, Cluster: c,
		Metadata: inspect.Metadata{CreationTimestamp: time.Now()},
		Nodes:    []inspect.NodeState{{Name: "node1", Dumps: []inspect.Dump{{Collector: inspect.CollectorIPTablesSave, Family: "IPv4", Text: text}}}}}
	a, err := reconcile.Analyze(s, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func key(f behavior.Finding) string {
	return f.Type + " " + f.Service + " " + f.Expected + "|" + f.Observed
}

func describe(ss []string) string { return "  " + strings.Join(ss, "\n  ") }

func dropLine(prefix string) func(string) string {
	return func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func service(c *inspect.Cluster, ns, name string) *corev1.Service {
	for i := range c.Services {
		if c.Services[i].Namespace == ns && c.Services[i].Name == name {
			return &c.Services[i]
		}
	}
	panic("no service " + ns + "/" + name)
}

func deleteService(c *inspect.Cluster, ns, name string) {
	var keep []corev1.Service
	for _, s := range c.Services {
		if s.Namespace != ns || s.Name != name {
			keep = append(keep, s)
		}
	}
	c.Services = keep
}

func slice(c *inspect.Cluster, ns, name string) *discoveryv1.EndpointSlice {
	for i := range c.EndpointSlices {
		if c.EndpointSlices[i].Namespace == ns && c.EndpointSlices[i].Name == name {
			return &c.EndpointSlices[i]
		}
	}
	panic("no slice " + ns + "/" + name)
}
