package iptables

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// grepExcerpt is what `iptables-save | grep PATTERN` of a capture gives:
// the matching rule lines, without headers, chain declarations or COMMIT.
func grepExcerpt(t *testing.T, path, pattern string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, pattern) && strings.HasPrefix(l, "-A ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestExcerptAssumesFixedChains: greps of one Service from a capture of
// kube-proxy v1.36.3 jump to KUBE-MARK-MASQ and rely on KUBE-POSTROUTING,
// KUBE-SERVICES' last rule (to KUBE-NODEPORTS) and the built-in chains'
// jumps, none of which they hold. The walk assumes them as kube-proxy
// writes them, and says so, instead of ending the branch at the missing
// chain or leaving the NodePort unhandled: every packet fares as on the
// whole capture.
func TestExcerptAssumesFixedChains(t *testing.T) {
	const capture = "../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt"
	// An older release's NodePort, whose rules jump from KUBE-NODEPORTS
	// to the Service's chain: a grep of it lacks KUBE-SERVICES' last rule.
	const old = "../../testdata/seeds/old-nodeport-mysql.nat-rules.txt"
	type probe struct {
		src, dst string
		port     uint16
		entry    dataplane.Entry
	}
	for _, c := range []struct {
		capture, grep string
		probes        []probe
	}{
		{capture, "default/nginx:http", []probe{{"192.0.2.10", "10.96.94.233", 80, dataplane.Output},
			{"10.244.0.9", "10.96.94.233", 80, dataplane.Prerouting}, {"198.18.0.1", "10.96.94.233", 80, dataplane.Prerouting}}},
		{old, "mysql-service", []probe{{"198.18.0.1", "192.0.2.10", 30964, dataplane.Prerouting},
			{"192.0.2.10", "192.0.2.10", 30964, dataplane.Output}}},
		// A NodePort without endpoints: rejected in filter.
		{capture, "default/web-np:http", []probe{{"198.18.0.1", "192.0.2.10", 30080, dataplane.Prerouting}}},
	} {
		text := grepExcerpt(t, c.capture, c.grep)
		rs, err := ParseString("excerpt", text, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(c.capture)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := ParseString(c.capture, string(data), ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range c.probes {
			p := pkt(pr.src, pr.dst, pr.port, "tcp", pr.entry)
			got, want := map[string]float64{}, map[string]float64{}
			var notes []string
			for _, b := range NewWalker(rs, node1).Walk(p) {
				got[summary(b)] += b.Probability
				notes = append(notes, b.Notes...)
			}
			for _, b := range NewWalker(whole, node1).Walk(p) {
				want[summary(b)] += b.Probability
			}
			same := len(got) == len(want)
			for k, v := range want {
				if d := got[k] - v; d > 1e-9 || d < -1e-9 {
					same = false
				}
			}
			if !same {
				t.Errorf("grep %s: %s: excerpt %v, whole dump %v\nnotes %q", c.grep, p, got, want, notes)
			}
			if strings.Contains(fmt.Sprint(got), "masq") && !slices.ContainsFunc(notes, func(n string) bool {
				return strings.HasPrefix(n, "nat chain KUBE-MARK-MASQ is not in the dump: assumed")
			}) {
				t.Errorf("grep %s: %s: masqueraded, with no note that KUBE-MARK-MASQ was assumed: %q", c.grep, p, notes)
			}
		}
	}
	// A whole dump assumes nothing.
	for _, b := range NewWalker(loadFixture(t), node1).Walk(pkt("192.0.2.10", "10.96.94.233", 80, "tcp", dataplane.Output)) {
		for _, n := range b.Notes {
			if strings.Contains(n, "assumed") {
				t.Errorf("whole dump: %q", n)
			}
		}
	}
}

// TestAssumedText: what a walk of an excerpt may assume reads, in both
// families.
func TestAssumedText(t *testing.T) {
	for _, family := range []string{"IPv4", "IPv6"} {
		rs, err := parseAssumed(family)
		if err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		if c := rs.Chain("nat", "KUBE-MARK-MASQ"); c == nil || c.Len() != 1 {
			t.Errorf("%s: KUBE-MARK-MASQ %+v", family, c)
		}
	}
}
