package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endpointsOnly is the two-nodes capture with its EndpointSlices turned
// into v1 Endpoints objects (see testdata/endpoints/README.md).
const endpointsOnly = "../../testdata/endpoints/two-nodes-endpoints.yaml"

// snapshotWithObjects writes a snapshot of node1's captured rules with the
// given objects file.
func snapshotWithObjects(t *testing.T, objects string) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	_, stderr, code := run(t, "collect", "--node", "node1", "--objects", objects, "--iptables-save", fixture+"node1.iptables-save.txt", "-f", snap)
	if code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	return snap
}

// writeObjects writes the text of file src, with old replaced once by new
// and extra appended, to a temporary file.
func writeObjects(t *testing.T, src, old, new, extra string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if old != "" {
		if n := strings.Count(s, old); n != 1 {
			t.Fatalf("%q occurs %d times in %s, want 1", old, n, src)
		}
		s = strings.Replace(s, old, new, 1)
	}
	p := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(p, []byte(s+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const endpointsOnlyNote = "node node1: endpoints read from the v1 Endpoints object, as the Service has no EndpointSlice, for 3 Services: default/nginx, shop/cart, shop/dns"

func hasNote(notes []string, prefix string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func TestDriftEndpointsOnlyHealthy(t *testing.T) {
	snap := snapshotWithObjects(t, endpointsOnly)
	out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
	if code != exitOK {
		t.Fatalf("drift: exit %d, want 0: %s%s", code, out, stderr)
	}
	r := decodeDrift(t, out)
	if len(r.Findings) != 0 {
		t.Errorf("findings on a healthy node: %+v", r.Findings)
	}
	if !hasNote(r.Notes, endpointsOnlyNote) {
		t.Errorf("no note naming the Endpoints source: %q", r.Notes)
	}
}

func TestDriftEndpointsOnlyDroppedAddress(t *testing.T) {
	objects := writeObjects(t, endpointsOnly, "    - ip: 10.244.0.5\n      nodeName: node1\n", "", "")
	out, stderr, code := run(t, "drift", "--snapshot", snapshotWithObjects(t, objects), "-o", "json")
	if code != exitDrift {
		t.Fatalf("drift: exit %d, want %d: %s%s", code, exitDrift, out, stderr)
	}
	r := decodeDrift(t, out)
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %+v, want one", r.Findings)
	}
	f := r.Findings[0]
	if f.Type != "StaleEndpoint" || f.Service != "default/nginx:http" || f.Observed != "10.244.0.5:8080" || f.Expected != "absent" {
		t.Errorf("finding = %+v", f)
	}
}

func TestExplainEndpointsOnly(t *testing.T) {
	out, stderr, code := run(t, "explain", "default/nginx", "--snapshot", snapshotWithObjects(t, endpointsOnly))
	if code != exitOK {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"forward to 3 backends",
		"info    EndpointsOnly: endpoints read from the v1 Endpoints object: the Service has no EndpointSlice",
		// explain models only the Service asked about.
		"for 1 Service: default/nginx",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NoEndpoints") {
		t.Errorf("explain reports NoEndpoints with an Endpoints object:\n%s", out)
	}
}

// nginxEndpoints is a v1 Endpoints object for default/nginx that lacks
// 10.244.1.7, has 10.244.0.6 not ready and 10.244.0.99 that no slice has.
const nginxEndpoints = `---
apiVersion: v1
kind: Endpoints
metadata: {name: nginx, namespace: default}
subsets:
- addresses: [{ip: 10.244.0.5, nodeName: node1}, {ip: 10.244.0.99, nodeName: node1}]
  notReadyAddresses: [{ip: 10.244.0.6, nodeName: node1}]
  ports: [{name: http, port: 8080, protocol: TCP}]
`

func TestEndpointsDisagreeingWithSlices(t *testing.T) {
	snap := snapshotWithObjects(t, writeObjects(t, fixture+"objects.yaml", "", "", nginxEndpoints))
	out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
	if code != exitOK {
		t.Fatalf("drift: exit %d, want 0 (the slices match the rules): %s%s", code, out, stderr)
	}
	r := decodeDrift(t, out)
	const note = "node node1: default/nginx: its EndpointSlices (which kube-proxy 1.19 and later follows, and svctrace uses) and its v1 Endpoints object (which kube-proxy before 1.19 followed) disagree: " +
		"only in the EndpointSlices: 10.244.1.7:8080 (http/TCP); only in the Endpoints object: 10.244.0.99:8080 (http/TCP); " +
		"ready in the EndpointSlices but not in the Endpoints object: 10.244.0.6:8080 (http/TCP)"
	if !hasNote(r.Notes, note) {
		t.Errorf("notes = %q\nwant %q", r.Notes, note)
	}
	if hasNote(r.Notes, "node node1: endpoints read from the v1 Endpoints object") {
		t.Errorf("a Service with slices reported as read from Endpoints: %q", r.Notes)
	}

	out, stderr, code = run(t, "explain", "default/nginx", "--snapshot", snap)
	if code != exitOK {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "warning EndpointsMismatch: default/nginx: its EndpointSlices") || !strings.Contains(out, "forward to 3 backends") {
		t.Errorf("explain output:\n%s", out)
	}
}
