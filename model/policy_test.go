package model

import "testing"

func TestTrafficPolicies(t *testing.T) {
	remote := []Endpoint{{IP: "10.244.2.5", Port: 80}}
	local := []Endpoint{{IP: "10.244.1.5", Port: 80, Local: true}}
	for _, tc := range []struct {
		name string
		p    ServicePort
		want TrafficPolicies
	}{{
		name: "cluster policies, endpoints elsewhere",
		p:    ServicePort{HasAnyEndpoints: true, ClusterEndpoints: remote},
		want: TrafficPolicies{Internal: PolicyTarget{HasEndpoints: true}, External: PolicyTarget{HasEndpoints: true}, UsesCluster: true},
	}, {
		name: "no endpoints anywhere",
		p:    ServicePort{},
		want: TrafficPolicies{},
	}, {
		// ITP Local without a local endpoint: ClusterIP traffic has
		// nowhere to go, though the Service has endpoints.
		name: "internal local, none on the node",
		p:    ServicePort{HasAnyEndpoints: true, InternalPolicyLocal: true, LocalEndpoints: []Endpoint{}},
		want: TrafficPolicies{Internal: PolicyTarget{Local: true}, External: PolicyTarget{HasEndpoints: true}},
	}, {
		// ETP Local still uses the cluster chain, for traffic from pods
		// and the node that is short-circuited to it.
		name: "external local, one on the node",
		p: ServicePort{HasAnyEndpoints: true, ExternalPolicyLocal: true, ExternallyAccessible: true,
			ClusterEndpoints: append(remote, local...), LocalEndpoints: local},
		want: TrafficPolicies{Internal: PolicyTarget{HasEndpoints: true}, External: PolicyTarget{Local: true, HasEndpoints: true},
			UsesCluster: true, UsesLocal: true},
	}, {
		name: "external local, not externally accessible",
		p:    ServicePort{HasAnyEndpoints: true, ExternalPolicyLocal: true, ClusterEndpoints: remote, LocalEndpoints: local},
		want: TrafficPolicies{Internal: PolicyTarget{HasEndpoints: true}, External: PolicyTarget{Local: true, HasEndpoints: true},
			UsesCluster: true},
	}} {
		if got := tc.p.TrafficPolicies(); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPolicyTargetChain(t *testing.T) {
	if got := (PolicyTarget{}).Chain("SVC", "SVL"); got != "SVC" {
		t.Errorf("Cluster policy: %s, want SVC", got)
	}
	if got := (PolicyTarget{Local: true}).Chain("SVC", "SVL"); got != "SVL" {
		t.Errorf("Local policy: %s, want SVL", got)
	}
}
