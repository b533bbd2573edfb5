//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// TestConntrackRepair plays the oldest Service complaint: a UDP client
// keeps sending into a conntrack entry that still NATs to an endpoint that
// is gone. kube-proxy is stopped, endpoint A leaves the API and the node's
// rules (what a kube-proxy whose conntrack cleanup failed leaves behind);
// drift must report exactly that entry, reconcile conntrack --apply must
// delete exactly it, the client's next packets must reach B, and a TCP
// connection to another Service must live through it all.
func TestConntrackRepair(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) { conntrackRepair(t, mode) })
	}
}

func conntrackRepair(t *testing.T, mode string) {
	l := lab.Start(t, lab.Options{Nodes: 2})
	c := &cluster{Lab: l, bin: buildSvctrace(t), pods: map[string]*lab.Pod{}, mode: mode, version: l.ProxyVersion}
	for _, n := range []string{"node1", "node2"} {
		if err := c.startProxy(n); err != nil {
			t.Fatal(err)
		}
	}
	add := func(spec lab.PodSpec) *lab.Pod {
		p, err := l.AddPodSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		c.pods[spec.Name] = p
		return p
	}
	a := add(lab.PodSpec{Node: "node1", Name: "dns-a", Labels: map[string]string{"app": "dns"}, Listeners: []lab.Listener{lab.UDP(5353)}})
	b := add(lab.PodSpec{Node: "node2", Name: "dns-b", Labels: map[string]string{"app": "dns"}, Listeners: []lab.Listener{lab.UDP(5353)}})
	add(lab.PodSpec{Node: "node2", Name: "db", Labels: map[string]string{"app": "db"}, Listeners: []lab.Listener{{Proto: "TCP", Port: 5432, Hold: true}}})
	client := add(lab.PodSpec{Node: "node1", Name: "client", NoAPIObject: true})
	l.Apply(t, `
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: default}
spec:
  selector: {app: dns}
  ports: [{name: dns, port: 53, targetPort: 5353, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: default}
spec:
  selector: {app: db}
  ports: [{name: pg, port: 5432, targetPort: 5432, protocol: TCP}]
`)
	dnsSlice := func(eps ...endpoint) string {
		return sliceYAML("dns", "dns-1", []slicePort{{"dns", "UDP", 5353}}, eps)
	}
	epA := endpoint{pod: "dns-a", ip: a.IP, node: "node1"}
	epB := endpoint{pod: "dns-b", ip: b.IP, node: "node2"}
	l.Apply(t, dnsSlice(epA, epB))
	l.Apply(t, sliceYAML("db", "db-1", []slicePort{{"pg", "TCP", 5432}}, []endpoint{{pod: "db", ip: c.pods["db"].IP, node: "node2"}}))
	for _, n := range []string{"node1", "node2"} {
		if err := l.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
	}
	dnsIP, dbIP := clusterIP(t, c, "dns"), clusterIP(t, c, "db")

	// A TCP connection to another Service, held open throughout.
	held, heldPort := holdTCP(t, c, "client", dbIP+":5432")
	defer held.Process.Kill()

	// A UDP client on a fixed source port, pinned to A by conntrack.
	sport := 0
	for p := 41000; p < 41064 && sport == 0; p++ {
		if hit := dialOnce(t, c, dnsIP+":53", p); hit == "dns-a" {
			sport = p
		}
	}
	if sport == 0 {
		t.Fatal("no source port of 64 reached dns-a")
	}
	waitDrift(t, c, "node1", nil)

	// kube-proxy stops; A leaves the API and node1's rules, but not
	// conntrack.
	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, dnsSlice(epB))
	removeEndpointFromRules(t, c, "default/dns:dns", "default/dns/udp/dns", a.IP)
	if hit := dialOnce(t, c, dnsIP+":53", sport); hit != "dns-a" {
		t.Fatalf("the client's flow reached %q; the stale entry should still send it to dns-a", hit)
	}
	client1 := fmt.Sprintf("%s:%d", client.IP, sport)
	waitDrift(t, c, "node1", []string{"StaleConntrack default/dns:dns a serving endpoint of default/dns:dns|udp from client " + client1 + " to " + a.IP + ":5353"})

	out, code := c.svctrace(t, "node1", "reconcile", "conntrack", "--local", "--node", "node1")
	if code != 1 || !strings.Contains(out, client1) || !strings.Contains(out, a.IP+":5353") {
		t.Fatalf("dry run: exit %d, want 1 listing the entry of %s:\n%s", code, client1, out)
	}
	out, code = c.svctrace(t, "node1", "reconcile", "conntrack", "--local", "--node", "node1", "--apply", "-o", "json")
	if code != 0 {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	var rep struct {
		Deleted   int               `json:"deleted"`
		Stale     []json.RawMessage `json:"stale"`
		Remaining []json.RawMessage `json:"remaining"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.Deleted != 1 || len(rep.Stale) != 1 || len(rep.Remaining) != 0 {
		t.Fatalf("apply deleted %d of %d stale entries, %d remain:\n%s", rep.Deleted, len(rep.Stale), len(rep.Remaining), out)
	}
	if hit := dialOnce(t, c, dnsIP+":53", sport); hit != "dns-b" {
		t.Fatalf("after the repair the client reached %q, want dns-b", hit)
	}
	waitDrift(t, c, "node1", nil)

	// The held TCP connection is untouched: its process lives and its
	// entry is still there.
	if held.ProcessState != nil {
		t.Fatal("the held TCP connection ended")
	}
	ct, err := c.Exec("node1", "conntrack", "-L", "-p", "tcp", "--orig-dst", dbIP)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`ESTABLISHED .*sport=` + heldPort + ` `).MatchString(ct) {
		t.Fatalf("the held connection's entry (sport %s) is gone:\n%s", heldPort, ct)
	}
}

// dialOnce sends one UDP query from a fixed source port and returns the
// backend that answered ("" on failure).
func dialOnce(t *testing.T, c *cluster, addr string, sport int) string {
	t.Helper()
	res, err := c.Dial("client", "udp", addr, 1, "--sport", fmt.Sprint(sport))
	if err != nil {
		t.Fatal(err)
	}
	for name := range res.Hits {
		return name
	}
	return ""
}

// holdTCP opens a long-lived TCP connection from a pod and returns the
// process and its local port.
func holdTCP(t *testing.T, c *cluster, from, addr string) (*exec.Cmd, string) {
	t.Helper()
	ns, err := c.NetNS(from)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, c.Labnet(), "hold", addr, "--for", "10m")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		f := strings.Fields(l)
		if !ok || len(f) != 2 {
			t.Fatalf("hold %s: %q", addr, l)
		}
		return cmd, f[1]
	case <-time.After(10 * time.Second):
		t.Fatalf("hold %s: no connection", addr)
	}
	return nil, ""
}
