package iptables

import (
	"os"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
)

// TestExcerptProvesNoOrphan: in a grep excerpt, a chain no rule jumps to
// proves nothing (the jump may be cut out), so no OrphanChain is found,
// and the plane says why; iptables -S of the whole table declares every
// chain, and the same chain unreachable there is an orphan.
func TestExcerptProvesNoOrphan(t *testing.T) {
	const capture = "../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt"
	// The endpoint chain of 10.244.0.5 without the Service's rule that
	// jumps to it: what a grep of the chain's own rules gives.
	excerpt := grepExcerpt(t, capture, "-A KUBE-SEP-DFWPZSRRP22P56ON ")
	rs, err := ParseString("excerpt", excerpt, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Excerpt == "" {
		t.Fatalf("a grep excerpt is not taken for one:\n%s", excerpt)
	}
	for _, f := range TextChecks(rs, "node1", "iptables") {
		if f.Type == behavior.OrphanChain {
			t.Errorf("excerpt: %s", f.Message)
		}
	}
	if notes := (&Plane{Rules: rs}).Notes(); len(notes) == 0 || !strings.HasPrefix(notes[0], "an excerpt of the rules (rules of chain ") {
		t.Errorf("notes %q, want the excerpt's first", notes)
	}

	// The same chain, declared, in iptables -S form of the whole table,
	// where nothing jumps to it.
	sep := strings.Fields(excerpt)[1]
	var whole []string
	whole = append(whole, "-P PREROUTING ACCEPT", "-N "+sep)
	for _, l := range strings.Split(strings.TrimSpace(excerpt), "\n") {
		if strings.HasPrefix(l, "-A "+sep+" ") {
			whole = append(whole, l)
		}
	}
	rs, err = ParseString("iptables -t nat -S", strings.Join(whole, "\n")+"\n", ParseOptions{Table: "nat"})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Excerpt != "" {
		t.Errorf("iptables -S with every chain declared taken for an excerpt: %s", rs.Excerpt)
	}
	var orphan bool
	for _, f := range TextChecks(rs, "node1", "iptables") {
		orphan = orphan || f.Type == behavior.OrphanChain
	}
	if !orphan {
		t.Errorf("iptables -S: chain %s, declared and unreachable, is not an orphan", sep)
	}
}

// TestLeftoversOnlyOfAnotherMode: where the mode is not given, it is
// inferred from the chains: the userspace proxier's chains alone are that
// mode's, no leftover; beside iptables mode's per-Service chains they are
// leftovers, and the finding says the mode was inferred.
func TestLeftoversOnlyOfAnotherMode(t *testing.T) {
	data, err := os.ReadFile("../../testdata/seeds/userspace-mode.nat-rules.txt")
	if err != nil {
		t.Fatal(err)
	}
	userspace := string(data)
	mixed := userspace + grepExcerpt(t, "../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt", "default/nginx:http")
	for _, c := range []struct {
		name, text, mode string
		leftovers        int
		inferred         bool
	}{
		{"userspace alone, mode unknown", userspace, "", 0, false},
		{"userspace beside iptables mode's chains, mode unknown", mixed, "", 1, true},
		{"userspace alone, iptables mode given", userspace, "iptables", 1, false},
	} {
		rs, err := ParseString(c.name, c.text, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range TextChecks(rs, "node1", c.mode) {
			if f.Type != behavior.LeftoverRules {
				continue
			}
			n++
			if got := strings.Contains(f.Message, "inferred from the dump's chains"); got != c.inferred {
				t.Errorf("%s: %s", c.name, f.Message)
			}
		}
		if n != c.leftovers {
			t.Errorf("%s: %d leftovers, want %d", c.name, n, c.leftovers)
		}
	}
}

// TestPortlessRuleNoted: a dispatch rule without --dport (a simplified
// rule in an excerpt) is no frontend, and the plane says it left it out
// of explain instead of dropping it silently; trace still follows it.
func TestPortlessRuleNoted(t *testing.T) {
	text := `-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -j KUBE-SVC-TCOU7JCQXEZGVUNU
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y
`
	rs, err := ParseString("excerpt", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &Plane{Rules: rs}
	if fs := p.Frontends(); len(fs) != 1 || fs[0].Key.Port != 443 {
		t.Errorf("frontends %v, want only 10.96.0.1:443", fs)
	}
	found := false
	for _, n := range p.Notes() {
		found = found || strings.Contains(n, "sends 10.96.0.10 to KUBE-SVC-TCOU7JCQXEZGVUNU on every port")
	}
	if !found {
		t.Errorf("no note on the portless rule: %q", p.Notes())
	}
}
