package main

import (
	"encoding/json"
	"testing"

	"github.com/svctrace/svctrace/trace"
)

// TestTraceHopsAreStructured: every plane describes its hops itself, so a
// reader (the TUI, a script reading -o json) can tell a hop's Service, the
// endpoint it leads to and the shared plumbing without parsing rule text.
func TestTraceHopsAreStructured(t *testing.T) {
	for _, c := range []struct{ snap, dst string }{
		{"../../examples/lab-iptables-v1.36.3.snapshot.yaml", "10.96.166.90:80"},
		{"../../examples/lab-nftables-v1.36.3.snapshot.yaml", "10.96.2.225:80"},
		{"../../examples/lab-nftables-v1.33.13.snapshot.yaml", "10.96.210.229:80"},
	} {
		t.Run(c.snap, func(t *testing.T) {
			out, stderr, code := run(t, "trace", "--snapshot", c.snap, "--node", "node1", "--src", "10.244.1.12", "--dst", c.dst, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var r trace.TraceReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Branches) != 3 {
				t.Fatalf("%d branches, want 3", len(r.Branches))
			}
			for _, b := range r.Branches {
				if b.Service != "default/web:http" {
					t.Errorf("branch to %s: service %q", b.DNAT, b.Service)
				}
				var toEndpoint, ofService bool
				for _, h := range b.Hops {
					toEndpoint = toEndpoint || h.Endpoint == b.DNAT
					ofService = ofService || h.Service == "default/web:http" && !h.Shared
				}
				if !toEndpoint || !ofService {
					t.Errorf("branch to %s: a hop of the endpoint %v, a hop of the Service %v: %+v", b.DNAT, toEndpoint, ofService, b.Hops)
				}
				if !b.Hops[0].Shared {
					t.Errorf("branch to %s: the first hop (%s %s) is not marked shared plumbing", b.DNAT, b.Hops[0].Table, b.Hops[0].Chain)
				}
			}
		})
	}
}
