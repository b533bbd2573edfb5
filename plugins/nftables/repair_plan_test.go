package nftables

import (
	"slices"
	"testing"
)

// A plan rewrites a chain whose rules differ, edits a shared map element
// by element, deletes what kube-proxy would not have, and a Service scope
// keeps only that Service's objects and elements.
func TestLayoutChanges(t *testing.T) {
	web := "service-SUSTUHLJ-default/web/tcp/http"
	dns := "service-Z3XHB2ZZ-default/dns/udp/dns"
	webElem := "10.96.2.225 . tcp . 80 : goto " + web
	dnsElem := "10.96.222.211 . udp . 53 : goto " + dns
	target := newLayout("ip")
	target.Chains[web] = &LayoutChain{Rules: []string{"meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.1.10 . 8080, 1 : 10.244.1.11 . 8080 }"}}
	target.Chains[dns] = &LayoutChain{Rules: []string{"meta l4proto udp dnat ip to numgen random mod 1 map { 0 : 10.244.1.12 . 5353 }"}}
	target.Sets[mapServiceIPs] = &LayoutSet{IsMap: true, Elements: []string{dnsElem, webElem}}
	current := newLayout("ip")
	current.Chains[web] = &LayoutChain{Rules: []string{"meta l4proto tcp dnat ip to numgen random mod 1 map { 0 : 10.244.1.11 . 8080 }"}}
	current.Chains[dns] = target.Chains[dns]
	stale := "endpoint-AAAAAAAA-default/old/tcp/http__10.244.9.9/80"
	current.Chains[stale] = &LayoutChain{Rules: []string{"meta l4proto tcp dnat ip to 10.244.9.9:80"}}
	current.Sets[mapServiceIPs] = &LayoutSet{IsMap: true, Elements: []string{dnsElem}}

	cs := layoutChanges(current, target, "")
	var got []string
	for _, c := range cs {
		got = append(got, c.Op+" "+c.Object+" "+c.Service)
	}
	want := []string{
		"delete " + stale + " default/old:http",
		"rewrite " + web + " default/web:http",
		"edit service-ips default/web:http",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changes:\n%q\nwant:\n%q", got, want)
	}
	if !slices.Equal(cs[0].Endpoints, []string{"10.244.9.9:80"}) || !slices.Equal(cs[2].Add, []string{webElem}) {
		t.Errorf("changes: %+v", cs)
	}
	scoped := layoutChanges(current, target, "default/dns")
	if len(scoped) != 0 {
		t.Errorf("scoped to default/dns: %+v", scoped)
	}
	if scoped := layoutChanges(current, target, "default/web"); len(scoped) != 2 {
		t.Errorf("scoped to default/web: %+v", scoped)
	}
}

func TestNameService(t *testing.T) {
	for name, want := range map[string]string{
		"service-SUSTUHLJ-default/web/tcp/http":                       "default/web:http",
		"endpoint-ZSKNKJDY-default/sticky/tcp/http__10.244.1.10/8080": "default/sticky:http",
		"affinity-ZSKNKJDY-default/sticky/tcp/http__10.244.1.10/8080": "default/sticky:http",
		"local-AAAAAAAA-ns/svc/udp/":                                  "ns/svc",
		"services":                                                    "",
		"no-endpoint-services":                                        "",
	} {
		if got := nameService(name); got != want {
			t.Errorf("nameService(%q) = %q, want %q", name, got, want)
		}
	}
	if got := nameEndpoints("endpoint-X-ns/a/tcp/p__fd00.10.244..5/80"); !slices.Equal(got, []string{"[fd00:10:244::5]:80"}) {
		t.Errorf("IPv6 endpoint: %q", got)
	}
}

// The transaction creates before it fills, removes elements before it
// adds them, and deletes chains last, once nothing refers to them.
func TestScript(t *testing.T) {
	web := "service-SUSTUHLJ-default/web/tcp/http"
	aff := "affinity-ZSKNKJDY-default/sticky/tcp/http__10.244.1.10/8080"
	stale := "endpoint-AAAAAAAA-default/old/tcp/http__10.244.9.9/80"
	target := newLayout("ip")
	target.Chains[web] = &LayoutChain{Rules: []string{"meta l4proto tcp dnat ip to 10.244.1.10:8080"}}
	target.Sets[mapServiceIPs] = &LayoutSet{IsMap: true, KeyType: []string{"ipv4_addr", "inet_proto", "inet_service"}, DataType: []string{"verdict"},
		Elements: []string{"10.96.2.225 . tcp . 80 : goto " + web}}
	target.Sets[aff] = &LayoutSet{KeyType: []string{"ipv4_addr"}, Flags: []string{"timeout"}, Timeout: 10800}
	current := newLayout("ip")
	current.Chains[stale] = &LayoutChain{Rules: []string{"meta l4proto tcp dnat ip to 10.244.9.9:80"}}
	current.Sets[mapServiceIPs] = &LayoutSet{IsMap: true, KeyType: target.Sets[mapServiceIPs].KeyType, DataType: []string{"verdict"},
		Elements: []string{"10.96.9.9 . tcp . 80 : goto " + stale}}
	got := Script(current, target, layoutChanges(current, target, ""))
	want := `add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy ` + web + `
add set ip kube-proxy ` + aff + ` { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }
flush chain ip kube-proxy ` + stale + `
add rule ip kube-proxy ` + web + ` meta l4proto tcp dnat ip to 10.244.1.10:8080
delete element ip kube-proxy service-ips { 10.96.9.9 . tcp . 80 }
add element ip kube-proxy service-ips { 10.96.2.225 . tcp . 80 : goto ` + web + ` }
delete chain ip kube-proxy ` + stale + `
`
	if got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
}
