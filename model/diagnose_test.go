package model

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// svcCreated is when test services are created.
func svcCreated() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }

func testPod(name string, labels map[string]string, age time.Duration, ports ...corev1.ContainerPort) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels,
			CreationTimestamp: metav1.NewTime(svcCreated().Add(age))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}},
	}
}

func codes(causes []Cause) []string {
	out := []string{}
	for _, c := range causes {
		out = append(out, c.Severity+":"+c.Code)
	}
	return out
}

func findCause(t *testing.T, causes []Cause, code string) Cause {
	t.Helper()
	for _, c := range causes {
		if c.Code == code {
			return c
		}
	}
	t.Fatalf("no cause %s in %v", code, codes(causes))
	return Cause{}
}

// diagnose builds the node1 IPv4 view and diagnoses the first service.
func diagnose(t *testing.T, c *snapshot.Cluster) []Cause {
	t.Helper()
	v := buildView(t, c, "node1", "IPv4")
	return Diagnose(c, &c.Services[0], v, ProxierTraits{})
}

func TestDiagnosePodChecksAndLocalPolicy(t *testing.T) {
	yes := true
	svc := testService(func(s *corev1.Service) {
		s.Name = "web-app"
		s.CreationTimestamp = metav1.NewTime(svcCreated())
		s.Spec.Selector = map[string]string{"app": "web"}
		s.Spec.Ports[0].TargetPort = intstr.FromString("http")
		itp := corev1.ServiceInternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = &itp
	})
	noLinks := testPod("web-0", map[string]string{"app": "web"}, -2*time.Hour,
		corev1.ContainerPort{Name: "http", ContainerPort: 8080})
	noLinks.Spec.EnableServiceLinks = new(bool)
	c := &snapshot.Cluster{
		Services: []corev1.Service{svc},
		Pods: []corev1.Pod{
			testPod("web-2", map[string]string{"app": "web", "x": "y"}, time.Hour),
			testPod("web-1", map[string]string{"app": "web"}, -time.Hour,
				corev1.ContainerPort{Name: "http", ContainerPort: 8080}),
			noLinks,
			testPod("db-1", map[string]string{"app": "db"}, -time.Hour),
		},
		PodsListed: true,
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("s", "web-app", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "10.0.0.1", node: "node2", ready: &yes})},
	}
	causes := diagnose(t, c)
	want := []string{"warning:NamedTargetPortUnresolved", "warning:NoLocalEndpoints", "info:PodsOlderThanService"}
	if !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	named := findCause(t, causes, CodeNamedTargetPortUnresolved)
	if !reflect.DeepEqual(named.Objects, []string{"Pod ns/web-2"}) || !strings.Contains(named.Message, "1 of 3") {
		t.Errorf("named targetPort cause: %+v", named)
	}
	older := findCause(t, causes, CodePodsOlderThanService)
	if !reflect.DeepEqual(older.Objects, []string{"Pod ns/web-1"}) ||
		!strings.Contains(older.Message, "WEB_APP_SERVICE_HOST, WEB_APP_SERVICE_PORT, WEB_APP_SERVICE_PORT_HTTP") {
		t.Errorf("older pods cause: %+v", older)
	}
	local := findCause(t, causes, CodeNoLocalEndpoints)
	if !strings.Contains(local.Message, "internalTrafficPolicy Local") || !strings.Contains(local.Message, "10.96.0.10:80") {
		t.Errorf("no local cause: %s", local.Message)
	}
}

func TestDiagnoseSelectorMatchesNoPods(t *testing.T) {
	c := &snapshot.Cluster{
		Services:   []corev1.Service{testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })},
		Pods:       []corev1.Pod{testPod("db-1", map[string]string{"app": "db"}, 0)},
		PodsListed: true,
	}
	causes := diagnose(t, c)
	if want := []string{"error:SelectorMatchesNoPods", "error:NoEndpoints"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	if m := causes[0].Message; !strings.Contains(m, "app=web") || !strings.Contains(m, "1 pod in namespace ns") {
		t.Errorf("message %q", m)
	}
}

func TestDiagnoseNoReadyEndpointsAndFallback(t *testing.T) {
	yes, no := true, false
	c := &snapshot.Cluster{
		Services: []corev1.Service{testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("s", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP),
			ep{ip: "10.0.0.1", node: "node2", ready: &no, serving: &yes, term: &yes},
			ep{ip: "10.0.0.2", node: "node2", ready: &no, serving: &no, term: &yes},
			ep{ip: "10.0.0.3", node: "node2", ready: &no, serving: &no})},
	}
	causes := diagnose(t, c)
	want := []string{"error:NoReadyEndpoints", "warning:TerminatingFallback", "info:PodsNotListed"}
	if !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	if m := causes[0].Message; !strings.Contains(m, "3 endpoints") || !strings.Contains(m, "2 terminating (1 of them still serving)") {
		t.Errorf("NoReadyEndpoints message %q", m)
	}
	if m := causes[1].Message; !strings.Contains(m, "10.0.0.1:8080") || strings.Contains(m, "10.0.0.2") {
		t.Errorf("TerminatingFallback message %q", m)
	}
}

func TestDiagnoseKinds(t *testing.T) {
	manual := testService(nil)
	headless := testService(func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
		s.Spec.Selector = map[string]string{"app": "db"}
	})
	ext := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	tests := []struct {
		name string
		svc  corev1.Service
		want []string
	}{
		{"manual endpoints", manual, []string{"error:NoEndpoints", "info:NoSelector"}},
		{"headless", headless, []string{"error:SelectorMatchesNoPods", "error:NoEndpoints", "info:Headless"}},
		{"external name", ext, []string{"info:ExternalName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &snapshot.Cluster{Services: []corev1.Service{tt.svc}, PodsListed: true}
			if got := codes(diagnose(t, c)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("codes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDiagnoseFixture(t *testing.T) {
	c := loadFixture(t)
	v := buildView(t, c, "node1", "IPv4")
	byName := map[string]*corev1.Service{}
	for i := range c.Services {
		byName[c.Services[i].Namespace+"/"+c.Services[i].Name] = &c.Services[i]
	}
	want := map[string][]string{
		"default/nginx":      {"info:PodsNotListed"},
		"default/kubernetes": {"error:NoEndpoints", "info:NoSelector"},
		"default/web-np":     {"error:NoEndpoints", "info:PodsNotListed"},
		"shop/cart":          {"info:PodsNotListed"},
		"shop/dns":           {"info:PodsNotListed"},
		"shop/headless":      {"error:NoEndpoints", "info:Headless", "info:PodsNotListed"},
		"shop/ext":           {"info:ExternalName"},
	}
	for key, w := range want {
		if got := codes(Diagnose(c, byName[key], v, ProxierTraits{})); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: codes = %v, want %v", key, got, w)
		}
	}

	// cart on a node without a cart endpoint: ETP Local drops external traffic.
	v9 := buildView(t, c, "node9", "IPv4")
	causes := Diagnose(c, byName["shop/cart"], v9, ProxierTraits{})
	local := findCause(t, causes, CodeNoLocalEndpoints)
	for _, s := range []string{"externalTrafficPolicy Local", "NodePort 32296", "load-balancer IP 198.51.100.50:80", "node port 30237"} {
		if !strings.Contains(local.Message, s) {
			t.Errorf("message %q lacks %q", local.Message, s)
		}
	}
}
