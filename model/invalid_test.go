package model

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestInvalidClusterIP damages default/nginx's cluster IP in the real
// capture's objects: the Service is left out of the view, said so in a
// note and a Diagnose error naming it and the value, never used as an
// address; every other Service is kept.
func TestInvalidClusterIP(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(*corev1.Service)
		want   string
	}{
		{"not an address", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.94.333", []string{"10.96.94.333"}
		},
			`clusterIPs[0] "10.96.94.333" is not an IP address`},
		{"rule text", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.9/32 -j ACCEPT", []string{"10.96.0.9/32 -j ACCEPT"}
		}, `clusterIPs[0] "10.96.0.9/32 -j ACCEPT" is not an IP address`},
		{"no ipFamilies", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies = "10.96.94.333", nil, nil
		},
			`clusterIP "10.96.94.333" is not an IP address`},
		{"address of the other family", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::5", []string{"fd00::5"} },
			`clusterIPs[0] "fd00::5" is not an IPv4 address, though ipFamilies[0] is IPv4`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := loadFixture(t)
			whole := buildView(t, cl, "node1", "IPv4")
			var nginx *corev1.Service
			for i := range cl.Services {
				if cl.Services[i].Namespace == "default" && cl.Services[i].Name == "nginx" {
					nginx = &cl.Services[i]
				}
			}
			c.damage(nginx)
			v := buildView(t, cl, "node1", "IPv4")
			if ports := v.Find("default", "nginx"); len(ports) != 0 {
				t.Errorf("ports of the damaged Service: %+v", ports)
			}
			if got, want := len(v.Ports), len(whole.Ports)-len(whole.Find("default", "nginx")); got != want {
				t.Errorf("%d ports, want the other Services' %d", got, want)
			}
			sk, ok := v.Skip("default", "nginx")
			if !ok || !sk.Damaged || sk.Reason != c.want {
				t.Errorf("skipped %+v %v, want damaged: %s", sk, ok, c.want)
			}
			note := "Service default/nginx: " + c.want + ": left out of the IPv4 view; the other Services are checked"
			if !slices.Contains(v.Notes, note) {
				t.Errorf("notes %q, want %q", v.Notes, note)
			}
			causes := Diagnose(cl, nginx, v, ProxierTraits{Mode: "iptables"})
			if len(causes) == 0 || causes[0].Code != CodeInvalidClusterIP || causes[0].Severity != SeverityError || !strings.Contains(causes[0].Message, c.want) {
				t.Errorf("causes %+v, want an InvalidClusterIP error first", causes)
			}
		})
	}
}

// TestDecodeObjectsTwice: an object list holding a Service or an
// EndpointSlice twice (the real capture's list given twice) is refused,
// naming the object and both places.
func TestDecodeObjectsTwice(t *testing.T) {
	data, err := os.ReadFile("testdata/two-nodes-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = DecodeObjects([]byte(string(data) + "\n---\n" + string(data)))
	want := "document 2 item 0: a second Node node1, the first being document 1 item 0: the API holds each object once"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the list twice: %v, want %s", err, want)
	}
	for _, c := range []struct{ doc, want string }{
		{"apiVersion: v1\nkind: Service\nmetadata: {name: nginx, namespace: default}\nspec: {clusterIP: 10.96.0.7, ports: [{port: 80}]}\n",
			"document 2: a second Service default/nginx, the first being document 1 item "},
		{"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: nginx-abc, namespace: default}\naddressType: IPv4\nendpoints: []\n",
			"document 2: a second EndpointSlice default/nginx-abc, the first being document 1 item "},
		// The same name in another namespace is another object.
		{"apiVersion: v1\nkind: Service\nmetadata: {name: nginx, namespace: other}\nspec: {clusterIP: 10.96.0.7, ports: [{port: 80}]}\n", ""},
	} {
		_, _, err := DecodeObjects([]byte(string(data) + "\n---\n" + c.doc))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// TestUnusableAddresses: an external IP, ingress IP or source range of
// the real capture's shop/cart that is no address is left out with a
// note naming the field and the value, the rest of the Service kept.
func TestUnusableAddresses(t *testing.T) {
	cl := loadFixture(t)
	for i := range cl.Services {
		if s := &cl.Services[i]; s.Namespace == "shop" && s.Name == "cart" {
			s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, "198.51.100.300")
			s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges, "203.0.113.0/24 -j ACCEPT")
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: "lb\x1b[2J"})
		}
	}
	v := buildView(t, cl, "node1", "IPv4")
	for _, want := range []string{
		`Service shop/cart: spec.externalIPs[0] "198.51.100.300" is not an IP address: left out`,
		`Service shop/cart: spec.loadBalancerSourceRanges[1] "203.0.113.0/24 -j ACCEPT" is not a CIDR: left out`,
		`Service shop/cart: status.loadBalancer.ingress[1].ip "lb\x1b[2J" is not an IP address: left out`,
	} {
		if !slices.Contains(v.Notes, want) {
			t.Errorf("notes %q, want %q", v.Notes, want)
		}
	}
	if p := mustPort(t, v, "shop/cart:http", "TCP"); len(p.LoadBalancerIPs) != 1 || len(p.LoadBalancerSourceRanges) != 1 {
		t.Errorf("cart: %v %v", p.LoadBalancerIPs, p.LoadBalancerSourceRanges)
	}
}
