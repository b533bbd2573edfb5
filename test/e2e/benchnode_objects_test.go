//go:build linux

package e2e

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestMakeBenchObjects(t *testing.T) {
	const services, endpoints = 250, 10
	o, err := makeBenchObjects(services, endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Namespaces) != 3 || len(o.Services) != services || len(o.Slices) != services {
		t.Fatalf("%d namespaces, %d Services, %d slices; want 3, %d, %d", len(o.Namespaces), len(o.Services), len(o.Slices), services, services)
	}
	if o.Middle != "bench-001/svc-00125" {
		t.Errorf("middle Service %q, want bench-001/svc-00125", o.Middle)
	}
	cidr := netip.MustParsePrefix(benchClusterCIDR)
	node1 := netip.MustParsePrefix("10.244.1.0/24")
	seen := map[netip.Addr]bool{}
	for i, c := range o.Slices {
		var s discoveryv1.EndpointSlice
		if err := json.Unmarshal(c.Body, &s); err != nil {
			t.Fatal(err)
		}
		svc := s.Labels[discoveryv1.LabelServiceName]
		if want := "/apis/discovery.k8s.io/v1/namespaces/" + s.Namespace + "/endpointslices"; c.Path != want {
			t.Errorf("slice %d: path %q, want %q", i, c.Path, want)
		}
		if !strings.Contains(string(o.Services[i].Body), `"name":"`+svc+`","namespace":"`+s.Namespace+`"`) {
			t.Errorf("slice %d names Service %s/%s, not the Service made with it: %s", i, s.Namespace, svc, o.Services[i].Body)
		}
		if len(s.Endpoints) != endpoints {
			t.Errorf("slice %d: %d endpoints", i, len(s.Endpoints))
		}
		for _, ep := range s.Endpoints {
			a := netip.MustParseAddr(ep.Addresses[0])
			if seen[a] || !cidr.Contains(a) || a.As4()[3] == 0 || a.As4()[3] == 255 {
				t.Errorf("endpoint %s: repeated, outside %s, or a network or broadcast address", a, cidr)
			}
			seen[a] = true
			if (*ep.NodeName == "node1") != node1.Contains(a) {
				t.Errorf("endpoint %s on %s: node1's pods are 10.244.1.0/24", a, *ep.NodeName)
			}
			if !*ep.Conditions.Ready {
				t.Errorf("endpoint %s not ready", a)
			}
		}
	}
	if a, node, err := benchEndpoint(254); err != nil || a.String() != "10.244.2.1" || node != "node2" {
		t.Errorf("endpoint 254: %v %s %v, want 10.244.2.1 on node2", a, node, err)
	}
	if a, node, err := benchEndpoint(255 * 254); err != nil || a.String() != "10.245.0.1" || node != "node256" {
		t.Errorf("endpoint 255×254: %v %s %v, want 10.245.0.1 on node256", a, node, err)
	}
	if _, err := makeBenchObjects(100000, 10); err == nil || !strings.Contains(err.Error(), "beyond the cluster CIDR") {
		t.Errorf("a million endpoints: error %v, want one about the cluster CIDR", err)
	}
	if _, err := makeBenchObjects(0, 10); err == nil {
		t.Error("no Services: no error")
	}
}
