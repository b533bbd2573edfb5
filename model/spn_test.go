package model

import "testing"

func TestServicePortName(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    ServicePortName
		service string
	}{
		{"default/web:http", ServicePortName{"default", "web", "http"}, "default/web"},
		{"default/web", ServicePortName{"default", "web", ""}, "default/web"},
		{"kube-system/kube-dns:dns-tcp", ServicePortName{"kube-system", "kube-dns", "dns-tcp"}, "kube-system/kube-dns"},
		{"web:80", ServicePortName{"", "web", "80"}, "web"},
		{"", ServicePortName{}, ""},
	} {
		got := ParseServicePortName(c.in)
		if got != c.want || got.Service() != c.service || got.String() != c.in {
			t.Errorf("%q: got %+v (service %q, string %q)", c.in, got, got.Service(), got.String())
		}
	}
	p := ServicePort{Namespace: "shop", Name: "cart", PortName: "metrics"}
	if ParseServicePortName(p.SPN()) != (ServicePortName{"shop", "cart", "metrics"}) {
		t.Errorf("SPN %q does not parse back", p.SPN())
	}
}
