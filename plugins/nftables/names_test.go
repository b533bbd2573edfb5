package nftables

import "testing"

func TestSPNFromName(t *testing.T) {
	for name, want := range map[string][3]string{
		"service-ABCDEFGH-ns/web/tcp/http":                    {"ns/web:http", "tcp", "ok"},
		"endpoint-ABCDEFGH-ns/web/udp/dns__10.0.0.1/53":       {"ns/web:dns", "udp", "ok"},
		"affinity-ABCDEFGH-ns/web/tcp/__10.0.0.1/80":          {"ns/web", "tcp", "ok"},
		"external-ABCDEFGH-ns/web/tcp/":                       {"ns/web", "tcp", "ok"},
		"service-ABCDEFGH-ns//tcp/http":                       {},
		"service-ABCDEFGH-/web/tcp/http":                      {},
		"service-ABCDEFGH-ns/web/tcp":                         {},
		"service-ABCDEFGH-ns/web/tcp/http/more":               {},
		"service-ABCDEFGH-ns/web/tcp/a-long-port-name-cut...": {},
		"service-abcdefgh-ns/web/tcp/http":                    {},
		"services":                                            {},
	} {
		spn, proto, ok := SPNFromName(name)
		if got := [3]string{spn, proto, map[bool]string{true: "ok"}[ok]}; got != want {
			t.Errorf("SPNFromName(%q) = %q, want %q", name, got, want)
		}
	}
}
