//lint:file-ignore SA1019 v1 Endpoints are snapshot content on purpose.
package snapshot_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// richNode is the synthetic node with every kind of object and the cases
// a partial load must get right: Pods behind targetRefs (one in another
// namespace), a Pod only the selector finds, a Service with two slices,
// one with a v1 Endpoints object and no slice, a slice of no Service, a
// slice without the service-name label, a Service of the same name in
// another namespace, and FQDN and IPv6 addresses.
func richNode() *snapshot.Snapshot {
	s := snapshottest.Node(40, 3)
	c := s.Cluster
	c.PodsListed, c.EndpointsListed = true, true
	pod := func(ns, name, app, ip string) corev1.Pod {
		return corev1.Pod{
			TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app, "tier": "web"}},
			Spec:       corev1.PodSpec{NodeName: "node2", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			Status:     corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
		}
	}
	for i := range c.EndpointSlices {
		es := &c.EndpointSlices[i]
		for j := range es.Endpoints {
			name := fmt.Sprintf("%s-pod-%d", es.Labels[discoveryv1.LabelServiceName], j)
			es.Endpoints[j].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: name}
			c.Pods = append(c.Pods, pod(es.Namespace, name, c.Services[i].Name, es.Endpoints[j].Addresses[0]))
		}
	}
	ns5, ns7 := c.Services[5].Namespace, c.Services[7].Namespace
	c.Pods = append(c.Pods,
		pod(ns5, "svc-5-spare", "svc-5", "10.244.99.1"),   // selected, in no slice
		pod("other", "svc-5-far", "svc-5", "10.244.99.2"), // referenced from ns-5's second slice
		pod("other", "svc-5-lookalike", "svc-5", "10.244.99.3"),
	)
	second := *c.EndpointSlices[5].DeepCopy()
	second.Name = "svc-5-2"
	second.AddressType = discoveryv1.AddressTypeIPv6
	second.Endpoints = []discoveryv1.Endpoint{
		{Addresses: []string{"fd00::5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "svc-5-far"}},
		{Addresses: []string{"fd00::6"}, TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "node2"}},
	}
	orphan := *c.EndpointSlices[6].DeepCopy()
	orphan.Name, orphan.Labels = "no-label", nil
	orphan.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.244.98.1"}}}
	ghost := *c.EndpointSlices[6].DeepCopy()
	ghost.Name, ghost.Labels = "ghost-1", map[string]string{discoveryv1.LabelServiceName: "ghost"}
	ghost.AddressType = discoveryv1.AddressTypeFQDN
	ghost.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"db.example.com"}}}
	c.EndpointSlices = append(c.EndpointSlices, second, orphan, ghost)
	// svc-7 has a v1 Endpoints object and no slice; svc-8 has both.
	c.EndpointSlices = slices.DeleteFunc(c.EndpointSlices, func(es discoveryv1.EndpointSlice) bool { return es.Name == "svc-7-1" })
	for _, name := range []string{"svc-7", "svc-8"} {
		ns := ns7
		if name == "svc-8" {
			ns = c.Services[8].Namespace
		}
		c.Endpoints = append(c.Endpoints, corev1.Endpoints{
			TypeMeta:   metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Subsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{{IP: "10.244.97.1", TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name + "-pod-0"}}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.244.97.2", TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name + "-pod-1"}}},
				Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}},
			}},
		})
	}
	twin := *c.Services[5].DeepCopy()
	twin.Namespace = "other"
	c.Services = append(c.Services, twin)
	return s
}

// wantPartial is what a partial load for names holds, computed from the
// whole cluster by the rules Partial documents.
func wantPartial(whole *snapshot.Cluster, names []types.NamespacedName) *snapshot.Cluster {
	out := &snapshot.Cluster{PodsListed: whole.PodsListed, EndpointsListed: whole.EndpointsListed, Nodes: whole.Nodes}
	asked := map[types.NamespacedName]bool{}
	for _, n := range names {
		asked[n] = true
	}
	for _, svc := range whole.Services {
		if asked[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] {
			out.Services = append(out.Services, svc)
		}
	}
	pods := map[types.NamespacedName]bool{}
	ref := func(r *corev1.ObjectReference, ns string) {
		if r != nil && r.Kind == "Pod" {
			if r.Namespace != "" {
				ns = r.Namespace
			}
			pods[types.NamespacedName{Namespace: ns, Name: r.Name}] = true
		}
	}
	for _, es := range whole.EndpointSlices {
		name, ok := es.Labels[discoveryv1.LabelServiceName]
		if ok && asked[types.NamespacedName{Namespace: es.Namespace, Name: name}] {
			out.EndpointSlices = append(out.EndpointSlices, es)
			for _, e := range es.Endpoints {
				ref(e.TargetRef, es.Namespace)
			}
		}
	}
	for _, e := range whole.Endpoints {
		if asked[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] {
			out.Endpoints = append(out.Endpoints, e)
			for _, ss := range e.Subsets {
				for _, a := range append(slices.Clone(ss.Addresses), ss.NotReadyAddresses...) {
					ref(a.TargetRef, e.Namespace)
				}
			}
		}
	}
	for _, p := range whole.Pods {
		keep := pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		for _, svc := range out.Services {
			sel := svc.Spec.Selector
			if svc.Namespace == p.Namespace && len(sel) > 0 && matches(sel, p.Labels) {
				keep = true
			}
		}
		if keep {
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func wantAddrs(whole *snapshot.Cluster) []netip.Addr {
	var out []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, es := range whole.EndpointSlices {
		for _, e := range es.Endpoints {
			add(e.Addresses[0])
		}
	}
	for _, e := range whole.Endpoints {
		for _, ss := range e.Subsets {
			for _, a := range append(slices.Clone(ss.Addresses), ss.NotReadyAddresses...) {
				add(a.IP)
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func serviceNames(c *snapshot.Cluster) []string {
	var out []string
	for _, s := range c.Services {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkPartial loads names from path in part and compares with the rules.
func checkPartial(t *testing.T, path string, whole *snapshot.Snapshot, names []types.NamespacedName) *snapshot.Snapshot {
	t.Helper()
	got, err := snapshot.LoadPartial(path, names)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Cluster.Partial
	if p == nil {
		t.Fatal("a partial load of a binary snapshot has no Partial")
	}
	want := wantPartial(whole.Cluster, names)
	want.Partial = p
	if !reflect.DeepEqual(got.Cluster, want) {
		g, w := reflect.ValueOf(*got.Cluster), reflect.ValueOf(*want)
		for i := range g.NumField() {
			if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
				t.Errorf("%v: Cluster.%s differs from the rules' (got %d objects)", names, g.Type().Field(i).Name, g.Field(i).Len())
			}
		}
	}
	if !reflect.DeepEqual(got.Nodes, whole.Nodes) || !reflect.DeepEqual(got.Metadata, whole.Metadata) {
		t.Errorf("%v: node states or metadata differ from the whole load's", names)
	}
	wc := whole.Cluster
	total := snapshot.Counts{Nodes: len(wc.Nodes), Services: len(wc.Services), EndpointSlices: len(wc.EndpointSlices), Endpoints: len(wc.Endpoints), Pods: len(wc.Pods)}
	if p.Total != total {
		t.Errorf("Total %+v, want %+v", p.Total, total)
	}
	if !reflect.DeepEqual(p.ServiceNames, serviceNames(wc)) {
		t.Errorf("ServiceNames differ from the whole file's (%d against %d)", len(p.ServiceNames), len(serviceNames(wc)))
	}
	if !slices.Equal(p.EndpointAddrs, wantAddrs(wc)) {
		t.Errorf("EndpointAddrs %v, want %v", p.EndpointAddrs, wantAddrs(wc))
	}
	if !slices.Equal(p.Services, names) {
		t.Errorf("Services %v, want %v", p.Services, names)
	}
	for _, n := range names {
		count := 0
		for _, pod := range wc.Pods {
			if pod.Namespace == n.Namespace {
				count++
			}
		}
		if p.NamespacePods[n.Namespace] != count {
			t.Errorf("NamespacePods[%s] = %d, want %d", n.Namespace, p.NamespacePods[n.Namespace], count)
		}
	}
	return got
}

// TestLoadPartial: for every Service of the synthetic node and of every
// example, alone, a partial load holds exactly what Partial documents;
// likewise for several Services at once and for names not in the file.
func TestLoadPartial(t *testing.T) {
	cases := testSnapshots(t)
	for name, whole := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.snap")
			if err := snapshot.Save(whole, path); err != nil {
				t.Fatal(err)
			}
			var all []types.NamespacedName
			for _, svc := range whole.Cluster.Services {
				nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
				all = append(all, nn)
				checkPartial(t, path, whole, []types.NamespacedName{nn})
			}
			checkPartial(t, path, whole, all[:3])
			got := checkPartial(t, path, whole, []types.NamespacedName{{Namespace: "default", Name: "no-such-service"}, all[0]})
			if p := got.Cluster.Partial; p.HasService("default", "no-such-service") || !p.HasService(all[0].Namespace, all[0].Name) {
				t.Error("HasService is wrong for a missing or a present Service")
			}
			checkPartial(t, path, whole, nil)
		})
	}
}

// TestLoadPartialSynthetic spells out the richest case: ns-5/svc-5 brings
// its two slices, the Pods they reference (one in another namespace, and
// none for a targetRef of another kind), and the Pod only its selector
// finds; not its namesake in namespace other.
func TestLoadPartialSynthetic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.snap")
	if err := snapshot.Save(richNode(), path); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.LoadPartial(path, []types.NamespacedName{{Namespace: "ns-5", Name: "svc-5"}})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Cluster
	var names []string
	for _, p := range c.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	want := []string{"ns-5/svc-5-pod-0", "ns-5/svc-5-pod-1", "ns-5/svc-5-pod-2", "ns-5/svc-5-spare", "other/svc-5-far"}
	if !slices.Equal(names, want) {
		t.Errorf("pods %v, want %v", names, want)
	}
	if len(c.Services) != 1 || c.Services[0].Namespace != "ns-5" || len(c.EndpointSlices) != 2 || len(c.Nodes) != 2 {
		t.Errorf("%d services, %d slices, %d nodes; want 1 (in ns-5), 2, 2", len(c.Services), len(c.EndpointSlices), len(c.Nodes))
	}
	if !c.Partial.IsEndpointAddr(netip.MustParseAddr("fd00::6")) || c.Partial.IsEndpointAddr(netip.MustParseAddr("10.244.99.1")) {
		t.Error("IsEndpointAddr is wrong for an endpoint's address or a pod's that is no endpoint")
	}
	if _, err := snapshot.Encode(got, "again.snap"); err == nil || !strings.Contains(err.Error(), "loaded in part") {
		t.Errorf("encoding a partial snapshot: error %v, want a refusal", err)
	}
}

// TestLoadPartialText: YAML and JSON are loaded whole, with no Partial.
func TestLoadPartialText(t *testing.T) {
	s := richNode()
	for _, ext := range []string{".yaml", ".json"} {
		path := filepath.Join(t.TempDir(), "s"+ext)
		if err := snapshot.Save(s, path); err != nil {
			t.Fatal(err)
		}
		got, err := snapshot.LoadPartial(path, []types.NamespacedName{{Namespace: "ns-5", Name: "svc-5"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Cluster.Partial != nil || len(got.Cluster.Services) != len(s.Cluster.Services) {
			t.Errorf("%s: a partial load of a text snapshot is not whole (%d services, Partial %v)", ext, len(got.Cluster.Services), got.Cluster.Partial)
		}
	}
}
