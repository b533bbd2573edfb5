package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIPVSSeeds imports the IPVS tables of real clusters (ipvsadm -Ln,
// one an excerpt) without any API object: the node is read in ipvs mode,
// every virtual server is a frontend, and a trace to one reaches each of
// its real servers with its share.
func TestIPVSSeeds(t *testing.T) {
	for _, c := range []struct {
		seed, dst   string
		frontends   string
		backends    []string
		elisionNote bool
	}{
		{"ipvsadm-ln.minikube.txt", "10.109.134.113:8080", "4 frontends checked", []string{"172.17.0.3:80", "172.17.0.4:80", "172.17.0.5:80"}, false},
		{"ipvsadm-ln.bootcamp.txt", "10.96.3.215:38080", "1 frontend checked", []string{"100.84.80.88:8080", "100.121.213.72:8080", "100.121.213.109:8080"}, true},
	} {
		t.Run(c.seed, func(t *testing.T) {
			snap := filepath.Join(t.TempDir(), "snap.yaml")
			if _, stderr, code := run(t, "collect", "--node", "node1", "--ipvsadm", "../../testdata/seeds/"+c.seed, "-f", snap); code != exitOK {
				t.Fatalf("collect: exit %d: %s", code, stderr)
			}
			out, stderr, code := run(t, "drift", "--snapshot", snap)
			if code != exitOK || !strings.Contains(out, "node node1 (ipvs mode): "+c.frontends+", 0 findings") {
				t.Errorf("drift: exit %d\n%s%s", code, out, stderr)
			}
			if got := strings.Contains(out, "left out of this capture"); got != c.elisionNote {
				t.Errorf("the excerpt's elisions said: %v, want %v\n%s", got, c.elisionNote, out)
			}
			// explain without a Service lists every virtual server of the
			// dump, with each real server and its weight.
			out, stderr, code = run(t, "explain", "--snapshot", snap)
			if code != exitOK || !strings.HasPrefix(out, "Every frontend on node node1 (ipvs mode)") {
				t.Errorf("explain: exit %d\n%s%s", code, out, stderr)
			}
			seed, err := os.ReadFile("../../testdata/seeds/" + c.seed)
			if err != nil {
				t.Fatal(err)
			}
			var virtual string
			for _, l := range strings.Split(string(seed), "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) >= 3 && (f[0] == "TCP" || f[0] == "UDP"):
					virtual = f[0] + " " + f[1]
					if !strings.Contains(out, "ipvs "+virtual+" ") {
						t.Errorf("explain does not list the virtual server %s:\n%s", virtual, out)
					}
				case len(f) >= 4 && f[0] == "->" && f[1] != "RemoteAddress:Port":
					if want := "ipvs " + virtual + " -> " + f[1] + " " + f[2] + " " + f[3]; !strings.Contains(out, want) {
						t.Errorf("explain lacks %q:\n%s", want, out)
					}
				}
			}
			out, stderr, code = run(t, "trace", "--snapshot", snap, "--src", "10.244.0.5", "--dst", c.dst)
			if code != exitOK || !strings.Contains(out, "3 branches") {
				t.Fatalf("trace: exit %d\n%s%s", code, out, stderr)
			}
			for _, b := range c.backends {
				if !strings.Contains(out, "p=1/3  FORWARD -> "+b) || !strings.Contains(out, "-> "+b+" Masq 1 [p=1/3]") {
					t.Errorf("trace does not reach %s with a third of the connections:\n%s", b, out)
				}
			}
		})
	}
	_, stderr, code := run(t, "collect", "--node", "node1", "--ipvsadm", "../../testdata/seeds/v1.2x-clusterip-masq.nat-rules.txt", "-f", filepath.Join(t.TempDir(), "x.yaml"))
	if code != exitError || !strings.Contains(stderr, "v1.2x-clusterip-masq.nat-rules.txt:1:4") || !strings.Contains(stderr, "want -t, -u, --sctp-service or -f") {
		t.Errorf("an iptables dump given as an IPVS table: exit %d: %s", code, stderr)
	}
}
