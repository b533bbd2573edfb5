//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/test/lab"
)

// TestIPTablesMatrix runs the scenario matrix against kube-proxy in
// iptables mode: no findings while kube-proxy is healthy; real connections
// land only on the backends trace predicts; and with kube-proxy stopped,
// each change gives exactly its finding.
func TestIPTablesMatrix(t *testing.T) {
	runMatrix(t, startMatrix(t, "iptables", ""))
}

// TestNFTablesMatrix runs the same matrix against kube-proxy in nftables
// mode, in the newest release and in the first with nftables GA: their
// layouts differ, their behaviour must not.
func TestNFTablesMatrix(t *testing.T) {
	for _, v := range []string{"", "v1.33.13"} {
		name := v
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) { runMatrix(t, startMatrix(t, "nftables", v)) })
	}
}

func runMatrix(t *testing.T, c *cluster) {
	t.Run("healthy", func(t *testing.T) {
		for _, n := range []string{"node1", "node2"} {
			waitDrift(t, c, n, nil)
		}
	})
	// svctrace's render of kube-proxy's state is what kube-proxy wrote.
	t.Run("reconcile rules: nothing to change", func(t *testing.T) { nothingToRepair(t, c) })
	if dir := os.Getenv("SVCTRACE_LAB_CAPTURE"); dir != "" {
		c.capture(t, filepath.Join(dir, fmt.Sprintf("lab-%s-%s.snapshot.yaml", c.mode, c.version)))
	}
	t.Run("traffic", func(t *testing.T) { checkTraffic(t, c) })
	t.Run("changes", func(t *testing.T) { checkChanges(t, c) })
}

// nothingToRepair: on healthy nodes, svctrace's render of the release's layout is what
// kube-proxy wrote, rule for rule, so the repair plan changes nothing. kube-proxy's nftables
// mode flushes a chain a sync leaves unused and deletes it at its next sync, which may be an
// hour away (an endpoint chain after a zone change, in the releases that write one per
// endpoint): a plan that changes something is asked again after a sync that a Service
// created and deleted causes.
func nothingToRepair(t *testing.T, c *cluster) {
	for _, n := range []string{"node1", "node2"} {
		for try := 0; ; try++ {
			out, code := c.svctrace(t, n, "reconcile", "rules", "--local", "--node", n)
			if code == 0 && strings.Contains(out, "kube-proxy "+c.mode+" mode, layout of "+c.version) {
				break
			}
			if code != 1 || try > 0 {
				t.Errorf("reconcile rules on %s: exit %d\n%s", n, code, out)
				break
			}
			c.nudgeSync(t, n)
		}
	}
}

// nudgeSync makes kube-proxy on node sync twice, more than a second apart: a Service is
// created, then deleted.
func (c *cluster) nudgeSync(t *testing.T, node string) {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	c.Apply(t, `apiVersion: v1
kind: Service
metadata: {name: nudge, namespace: default}
spec:
  ports: [{name: http, port: 80, protocol: TCP}]
`)
	if err := c.WaitSynced(node); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := c.Delete("Service", "default", "nudge"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSynced(node); err != nil {
		t.Fatal(err)
	}
}

// flow is one kind of connection of the matrix.
type flow struct {
	name, from, src, proto, dst string
	// node, when set, is the node the connection starts on, itself (from
	// is that node): trace runs there, with --from node.
	node string
	// want is the set of pods trace must predict; none means the
	// connection must fail, with the verdict in fail (reject or drop).
	want []string
	fail string
	// sticky: every connection lands on one backend.
	sticky bool
}

func checkTraffic(t *testing.T, c *cluster) {
	c.trafficFlows(t, func(t *testing.T, from, proto, dst string, count int) lab.DialResult {
		res, err := c.Dial(from, proto, dst, count)
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
}

// trafficFlows checks the matrix's flows: trace's prediction from node1, then real
// connections made with dial, which names the backends reached by their matrix names; extra
// flows come after the matrix's.
func (c *cluster) trafficFlows(t *testing.T, dial func(t *testing.T, from, proto, dst string, count int) lab.DialResult, extra ...flow) {
	ip := func(svc string) string { return clusterIP(t, c, svc) }
	all := []string{"web-1", "web-2", "web-3"}
	node1Local := []string{"web-1", "web-2"}
	rel := proxyrelease.For(c.version)
	// default/zoned has zone hints but no topology-mode annotation: v1.30 ignores its hints.
	zoned := node1Local
	if rel.ZoneHintsNeedAnnotation() {
		zoned = all
	}
	// node2's own connection to default/local-node1's load balancer IP (Local policy, no
	// endpoint on node2) goes to node1's endpoints, but nftables mode of v1.31 and v1.32 drops it.
	fromNode2 := flow{name: "Local policy LoadBalancer from a node without local endpoints", from: "node2", node: "node2",
		proto: "tcp", dst: "198.51.100.60:80", want: node1Local}
	if c.mode == "nftables" && rel.NFTablesChecksEndpointsBeforeDNAT() {
		fromNode2.want, fromNode2.fail = nil, "drop"
	}
	flows := []flow{
		{name: "ClusterIP, 3 endpoints", from: "client", proto: "tcp", dst: ip("web") + ":80", want: all},
		{name: "multi-port, second port", from: "client", proto: "tcp", dst: ip("multi") + ":81", want: all},
		{name: "named targetPort", from: "client", proto: "tcp", dst: ip("named") + ":80", want: all},
		{name: "NodePort", from: "client", proto: "tcp", dst: "192.0.2.10:30080", want: all},
		{name: "externalIP", from: "client", proto: "tcp", dst: "198.51.100.7:80", want: all},
		{name: "LoadBalancer from outside its source ranges", from: "client", proto: "tcp", dst: "198.51.100.50:80", fail: "drop"},
		{name: "ETP Local from outside the cluster", from: "node2", src: "192.0.2.11", proto: "tcp", dst: "192.0.2.10:30081", want: node1Local},
		{name: "ITP Local", from: "client", proto: "tcp", dst: ip("web-itp") + ":80", want: node1Local},
		{name: "ClientIP affinity", from: "client", proto: "tcp", dst: ip("sticky") + ":80", want: all, sticky: true},
		{name: "UDP on a port shared with TCP", from: "client", proto: "udp", dst: ip("dns") + ":53", want: []string{"dns-1", "dns-2"}},
		{name: "TCP on a port shared with UDP", from: "client", proto: "tcp", dst: ip("dns") + ":53", want: []string{"dns-1", "dns-2"}},
		{name: "no endpoints", from: "client", proto: "tcp", dst: ip("empty") + ":80", fail: "reject"},
		{name: "terminating endpoints only", from: "client", proto: "tcp", dst: ip("draining") + ":80", want: []string{"web-3"}},
		{name: "topology hints", from: "client", proto: "tcp", dst: ip("zoned") + ":80", want: zoned},
		fromNode2,
	}
	for _, f := range append(flows, extra...) {
		t.Run(f.name, func(t *testing.T) {
			src, node := f.src, "node1"
			args := []string{"--from", "pod"}
			switch {
			case f.node != "":
				node, args = f.node, []string{"--from", "node"}
				src, _ = c.nodeIP(f.node)
			case f.src != "":
				args = []string{"--from", "external"}
			default:
				src = c.pods[f.from].IP
			}
			pred, other := c.predictedFrom(t, node, src, f.dst+"/"+f.proto, args...)
			got := keys(pred)
			if !slices.Equal(got, f.want) {
				t.Fatalf("trace predicts %v (and %v), want %v", got, other, f.want)
			}
			// 48 connections miss one of three backends with a chance
			// of 3·(2/3)^48, about 1e-8: the check cannot flake.
			count := 48
			if f.fail != "" {
				if len(other) != 1 || other[0] != f.fail {
					t.Fatalf("trace predicts %v, want one %s branch", other, f.fail)
				}
				count = 3 // each failed attempt waits for its timeout
			}
			res := dial(t, f.from, f.proto, f.dst, count)
			t.Logf("%s %s from %s: %v", f.proto, f.dst, f.from, res)
			if len(f.want) == 0 {
				if len(res.Hits) > 0 {
					t.Fatalf("connections succeeded although trace predicts %v: %v", other, res)
				}
				return
			}
			if len(res.Errors) > 0 {
				t.Errorf("failed connections: %q", res.Errors)
			}
			for pod := range res.Hits {
				if !pred[pod] {
					t.Errorf("a connection landed on %s, which trace did not predict (%v)", pod, got)
				}
			}
			if f.sticky {
				if len(res.Hits) != 1 {
					t.Errorf("affinity: connections spread over %v", res)
				}
				return
			}
			for _, pod := range f.want {
				if res.Hits[pod] == 0 {
					t.Errorf("predicted backend %s never reached in %d connections: %v", pod, count, res)
				}
			}
		})
	}
	t.Run("SCTP rules", func(t *testing.T) {
		// This kernel has no SCTP sockets, so no SCTP connection can be
		// made; the rules kube-proxy wrote are still traced.
		pred, _ := c.predictedFrom(t, "node1", c.pods["client"].IP, ip("sctp")+":9999/sctp", "--from", "pod")
		if got := keys(pred); !slices.Equal(got, all) {
			t.Fatalf("trace predicts %v for SCTP, want %v", got, all)
		}
	})
}

// checkChanges stops kube-proxy on node1 and makes one change at a time,
// each undone before the next.
func checkChanges(t *testing.T, c *cluster) {
	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	t.Run("endpoint removed", func(t *testing.T) { endpointRemoved(t, c) })
	apiChanges(t, c, func(t *testing.T) func() {
		c.Apply(t, sliceYAML("late", "late-1", []slicePort{{"http", "TCP", 8080}},
			[]endpoint{{pod: "web-1", ip: c.pods["web-1"].IP, node: "node1"}}))
		return func() {
			if err := c.Delete("EndpointSlice", "default", "late-1"); err != nil {
				t.Fatal(err)
			}
		}
	})
	failureCorpus(t, c)
	kernelChanges(t, c)
	t.Run("kube-proxy restarted repairs everything", func(t *testing.T) {
		if err := c.startProxy("node1"); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitSynced("node1"); err != nil {
			t.Fatal(err)
		}
		if fs, _ := c.drift(t, "node1"); len(fs) > 0 {
			t.Logf("node1 right after the restart (kube-proxy's zone race when only default/zoned): %q", fs)
		}
		c.relabelZones(t, "node1", "node2")
		waitDrift(t, c, "node1", nil)
		waitDrift(t, c, "node2", nil)
	})
}

// endpointRemoved takes web-2 out of default/web's EndpointSlice while kube-proxy is stopped
// on node1, waits for the one finding, and puts it back.
func endpointRemoved(t *testing.T, c *cluster) {
	c.Apply(t, c.slices(func(name string, eps []endpoint) []endpoint {
		if name != "web-1" {
			return eps
		}
		return slices.DeleteFunc(slices.Clone(eps), func(e endpoint) bool { return e.pod == "web-2" })
	}))
	waitDrift(t, c, "node1", []string{"StaleEndpoint default/web:http absent|" + c.pods["web-2"].IP + ":8080"})
	c.Apply(t, c.slices(nil))
	waitDrift(t, c, "node1", nil)
}

// apiChanges are the API changes both matrices make with kube-proxy stopped on node1, each
// undone before the next: a Service deleted, a Service added (endpoints gives it endpoints and
// returns how to take them away), a port changed.
func apiChanges(t *testing.T, c *cluster, endpoints func(t *testing.T) (undo func())) {
	t.Run("service deleted", func(t *testing.T) {
		ip := clusterIP(t, c, "web-ext")
		if err := c.Delete("Service", "default", "web-ext"); err != nil {
			t.Fatal(err)
		}
		waitDrift(t, c, "node1", []string{"StaleFrontend default/web-ext:http no frontend|forward"})
		c.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: web-ext, namespace: default}
spec:
  clusterIP: %s
  selector: {app: web}
  externalIPs: [198.51.100.7]
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`, ip))
		waitDrift(t, c, "node1", nil)
	})
	t.Run("service added", func(t *testing.T) {
		c.Apply(t, `
apiVersion: v1
kind: Service
metadata: {name: late, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`)
		undo := endpoints(t)
		waitDrift(t, c, "node1", []string{"MissingFrontend default/late:http forward"})
		if err := c.Delete("Service", "default", "late"); err != nil {
			t.Fatal(err)
		}
		undo()
		waitDrift(t, c, "node1", nil)
	})
	t.Run("port changed", func(t *testing.T) {
		setAltPort := func(port int) {
			c.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: multi, namespace: default}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: alt, port: %d, targetPort: 8080, protocol: TCP}
`, port))
		}
		setAltPort(82)
		waitDrift(t, c, "node1", []string{"MissingFrontend default/multi:alt forward", "StaleFrontend default/multi:alt no frontend|forward"})
		setAltPort(81)
		waitDrift(t, c, "node1", nil)
	})
}

// kernelChanges edits kube-proxy's rules on node1 behind its back (kube-proxy is stopped),
// each change undone or left for the restart that follows.
func kernelChanges(t *testing.T, c *cluster) {
	if c.mode == "nftables" {
		nftKernelChanges(t, c)
	} else {
		t.Run("firewall drop deleted in the kernel", func(t *testing.T) {
			// An outside client of the LoadBalancer now passes untouched:
			// the same ranges are allowed, the others are no longer
			// dropped.
			filter, err := c.Exec("node1", "iptables-save", "-t", "filter")
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^-A (KUBE-PROXY-FIREWALL -d 198\.51\.100\.50/32 .*-j DROP)$`).FindStringSubmatch(filter)
			if m == nil {
				t.Fatalf("no firewall drop for 198.51.100.50 in:\n%s", filter)
			}
			if _, err := c.Exec("node1", "sh", "-c", "iptables -D "+m[1]); err != nil {
				t.Fatal(err)
			}
			waitDrift(t, c, "node1", []string{"FirewallMismatch default/web-lb:http 203.0.113.0/24; others dropped|203.0.113.0/24; others pass untouched"})
			if _, err := c.Exec("node1", "sh", "-c", "iptables -A "+m[1]); err != nil {
				t.Fatal(err)
			}
			waitDrift(t, c, "node1", nil)
		})
		t.Run("rule deleted in the kernel", func(t *testing.T) { iptablesRuleDeleted(t, c) })
	}
}

// iptablesRuleDeleted deletes default/web's rule to web-1 from its KUBE-SVC chain on node1
// (kube-proxy is stopped) and waits for the one finding; a restart of kube-proxy repairs it.
func iptablesRuleDeleted(t *testing.T, c *cluster) {
	nat, err := c.Exec("node1", "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	web1 := c.pods["web-1"].IP
	re := regexp.MustCompile(`(?m)^-A (KUBE-SVC-\S+) (.*--comment "default/web:http -> ` + regexp.QuoteMeta(web1) + `:8080".*)$`)
	m := re.FindStringSubmatch(nat)
	if m == nil {
		t.Fatalf("no rule of default/web:http to %s in:\n%s", web1, nat)
	}
	if _, err := c.Exec("node1", "sh", "-c", "iptables -t nat -D "+m[1]+" "+m[2]); err != nil {
		t.Fatal(err)
	}
	waitDrift(t, c, "node1", []string{"MissingEndpoint default/web:http " + web1 + ":8080|absent"})
}

// nftKernelChanges edits kube-proxy's nftables table behind its back
// (kube-proxy is stopped): one map element deleted, one service chain
// flushed, each undone before the next.
func nftKernelChanges(t *testing.T, c *cluster) {
	web := clusterIP(t, c, "web")
	t.Run("map element deleted in the kernel", func(t *testing.T) {
		deleteMapElement(t, c, "service-ips", web+" . tcp . 80", "MissingFrontend default/web:http forward")
	})
	t.Run("firewall element deleted in the kernel", func(t *testing.T) {
		// Every source now reaches the LoadBalancer.
		deleteMapElement(t, c, "firewall-ips", "198.51.100.50 . tcp . 80", "FirewallMismatch default/web-lb:http 203.0.113.0/24|any source")
	})
	t.Run("service chain flushed in the kernel", func(t *testing.T) {
		table, err := c.Exec("node1", "nft", "list", "table", "ip", "kube-proxy")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`chain (service-[A-Z0-9]+-default/sticky/tcp/http) \{`).FindStringSubmatch(table)
		if m == nil {
			t.Fatalf("no service chain of default/sticky in:\n%s", table)
		}
		// kube-proxy's chain names hold slashes, which nft's command
		// syntax does not take: flush through its JSON interface.
		cmd := fmt.Sprintf(`{"nftables":[{"flush":{"chain":{"family":"ip","table":"kube-proxy","name":%q}}}]}`, m[1])
		if _, err := c.Exec("node1", "sh", "-c", "echo '"+cmd+"' | nft -j -f -"); err != nil {
			t.Fatal(err)
		}
		// The Service's dispatch remains, but leads nowhere: each backend
		// is missing (their endpoint chains are orphaned on the way).
		var want []string
		for _, p := range []string{"web-1", "web-2", "web-3"} {
			want = append(want, "MissingEndpoint default/sticky:http "+c.pods[p].IP+":8080|absent")
		}
		waitDrift(t, c, "node1", want)
	})
}

// deleteMapElement deletes one element of a verdict map of kube-proxy's
// table on node1, waits for the one finding it causes, and puts it back.
func deleteMapElement(t *testing.T, c *cluster, name, elem, want string) {
	t.Helper()
	set, err := c.Exec("node1", "nft", "list", "map", "ip", "kube-proxy", name)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(regexp.QuoteMeta(elem) + ` : ((?:goto|jump) \S+)`).FindStringSubmatch(set)
	if m == nil {
		t.Fatalf("no element %s in:\n%s", elem, set)
	}
	if _, err := c.Exec("node1", "nft", "delete", "element", "ip", "kube-proxy", name, "{ "+elem+" }"); err != nil {
		t.Fatal(err)
	}
	waitDrift(t, c, "node1", []string{want})
	if _, err := c.Exec("node1", "nft", "add", "element", "ip", "kube-proxy", name, "{ "+elem+" : "+strings.TrimSuffix(m[1], ",")+" }"); err != nil {
		t.Fatal(err)
	}
	waitDrift(t, c, "node1", nil)
}

func (c *cluster) predictedFrom(t *testing.T, node, src, dst string, extra ...string) (map[string]bool, []string) {
	t.Helper()
	return c.predictedArgs(t, node, append([]string{"--src", src, "--dst", dst}, extra...))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// capture writes a snapshot of both healthy nodes (the ones bundled in
// examples/ are made this way): SVCTRACE_LAB_CAPTURE=DIR.
func (c *cluster) capture(t *testing.T, path string) {
	tmp := filepath.Join(t.TempDir(), "capture.yaml")
	for i, n := range []string{"node1", "node2"} {
		args := []string{"collect", "--local", "--node", n, "-f", tmp}
		if i > 0 {
			args = append(args, "--append")
		}
		if out, code := c.svctrace(t, n, args...); code != 0 {
			t.Fatalf("collect on %s: exit %d: %s", n, code, out)
		}
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
