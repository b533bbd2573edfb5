package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

// causedBy puts a plane's own findings that name frontends in the place of
// the behaviour differences of those frontends: such a finding is their
// cause (an IPVS virtual address bound on no interface makes every path to
// it differ), and an operator needs the cause, once. causes are findings
// a plane can tell only as causes (dataplane.Causer): each is kept only
// where it stands for some difference. See replace for the matching.
func causedBy(findings, checks, causes []behavior.Finding) ([]behavior.Finding, []behavior.Finding) {
	findings = foldUnderJumps(findings, checks)
	findings, _ = replace(findings, checks)
	findings, used := replace(findings, causes)
	for i, c := range causes {
		if used[i] {
			checks = append(checks, c)
		}
	}
	return findings, checks
}

// replace drops the findings a cause stands for: those whose frontends
// are all the cause's (matched by address, port and protocol, since a
// plane may not tell an external address from a cluster one) and, when
// the cause names an endpoint, about that endpoint. A cause that replaces
// a finding lends it the finding's Service when it could not name one;
// used tells which causes replaced some.
func replace(findings, causes []behavior.Finding) ([]behavior.Finding, []bool) {
	used := make([]bool, len(causes))
	if len(causes) == 0 {
		return findings, used
	}
	out := findings[:0:0]
	for _, f := range findings {
		i := slices.IndexFunc(causes, func(c behavior.Finding) bool { return stands(c, f) })
		if i < 0 {
			out = append(out, f)
			continue
		}
		used[i] = true
		if causes[i].Service == "" {
			causes[i].Service = f.Service
		}
	}
	return out, used
}

// stands tells whether cause c stands for finding f.
func stands(c, f behavior.Finding) bool {
	if len(c.Frontends) == 0 || len(f.Frontends) == 0 || c.Endpoint != "" && c.Endpoint != f.Endpoint {
		return false
	}
	for _, fe := range f.Frontends {
		if !slices.ContainsFunc(c.Frontends, func(ce string) bool { return frontendAddr(ce) == frontendAddr(fe) }) {
			return false
		}
	}
	return true
}

// frontendAddr is a frontend's address, port and protocol, without its
// kind ("ClusterIP 10.96.0.10:80/TCP" → "10.96.0.10:80/TCP").
func frontendAddr(s string) string {
	_, addr, _ := strings.Cut(s, " ")
	return addr
}

// nameServices gives a plane's finding that names frontends but no
// Service the Service of the expected frontend at the first of them
// (the plane's rules may not name Services: ipvs).
func nameServices(fs []behavior.Finding, expected *behavior.Table) {
	if expected == nil {
		return
	}
	byAddr := map[string]string{}
	for _, f := range expected.Frontends {
		byAddr[frontendAddr(f.Key.String())] = f.Service
	}
	for i := range fs {
		if fs[i].Service == "" && len(fs[i].Frontends) > 0 {
			fs[i].Service = byAddr[frontendAddr(fs[i].Frontends[0])]
		}
	}
}

// foldUnderJumps drops the behaviour findings that lost entry jumps
// explain: a MissingJumpRule with sources leaves the Service traffic of
// those sources to no rule of kube-proxy, so every frontend's difference
// for them is its consequence, not a cause of its own. A finding is
// folded when all the sources it is about are among those of the jumps
// lost; each jump finding that folded some says how many, by type, in
// its message.
func foldUnderJumps(findings, checks []behavior.Finding) []behavior.Finding {
	lost := map[string]int{} // source class → the first jump finding losing it
	for i, c := range checks {
		if c.Type != behavior.MissingJumpRule {
			continue
		}
		for _, s := range c.Sources {
			if _, ok := lost[s]; !ok {
				lost[s] = i
			}
		}
	}
	if len(lost) == 0 {
		return findings
	}
	type tally struct{ frontends, services map[string]bool }
	folded := map[int]map[string]*tally{}
	var order []string
	kept := findings[:0:0]
	// lostFrontends are the frontends some folded finding names: a flow
	// of conntrack that their rules no longer take is one more
	// consequence.
	lostFrontends := map[string]int{}
	for _, f := range findings {
		if f.Type == behavior.StaleConntrack {
			continue
		}
		srcs := affectedSources(f)
		if !consequenceOfJump(f.Type) || !slices.ContainsFunc(srcs, func(s string) bool { _, ok := lost[s]; return ok }) ||
			slices.ContainsFunc(srcs, func(s string) bool { _, ok := lost[s]; return !ok }) {
			kept = append(kept, f)
			continue
		}
		i := lost[srcs[0]]
		if folded[i] == nil {
			folded[i] = map[string]*tally{}
		}
		t := folded[i][f.Type]
		if t == nil {
			t = &tally{map[string]bool{}, map[string]bool{}}
			folded[i][f.Type] = t
			if !slices.Contains(order, f.Type) {
				order = append(order, f.Type)
			}
		}
		for _, fe := range f.Frontends {
			t.frontends[fe] = true
			lostFrontends[frontendAddr(fe)] = i
		}
		t.services[f.Service] = true
	}
	for _, f := range findings {
		if f.Type != behavior.StaleConntrack {
			continue
		}
		i, ok := -1, len(f.Frontends) == 1 && strings.HasSuffix(f.Message, reasonRulesMoved)
		if ok {
			i, ok = lostFrontends[frontendAddr(f.Frontends[0])]
		}
		if !ok {
			kept = append(kept, f)
			continue
		}
		if folded[i][f.Type] == nil {
			folded[i][f.Type] = &tally{map[string]bool{}, map[string]bool{}}
			if !slices.Contains(order, f.Type) {
				order = append(order, f.Type)
			}
		}
		folded[i][f.Type].frontends[f.Frontends[0]] = true
		folded[i][f.Type].services[f.Service] = true
	}
	for i, byType := range folded {
		var parts []string
		for _, typ := range order {
			if t := byType[typ]; t != nil {
				parts = append(parts, fmt.Sprintf("%s for %s of %s",
					typ, wording.Count(len(t.frontends), "frontend", "frontends"), wording.Count(len(t.services), "Service", "Services")))
			}
		}
		checks[i].Message += " Folded in, as its consequences: " + strings.Join(parts, ", ") + "."
	}
	return kept
}

// consequenceOfJump: a behaviour difference a lost entry jump can cause
// (not one that says the kernel holds more than it should).
func consequenceOfJump(typ string) bool {
	switch typ {
	case behavior.MissingFrontend, behavior.MissingEndpoint, behavior.WeightMismatch, behavior.AffinityMismatch,
		behavior.FirewallMismatch, behavior.MasqueradeMismatch, behavior.LocalPolicyMismatch, behavior.NoEndpointsRuleMismatch:
		return true
	}
	return false
}

// affectedSources are the source classes a finding is about: its own, or
// every class when it names none (a firewall is about sources outside the
// node).
func affectedSources(f behavior.Finding) []string {
	if len(f.Sources) > 0 {
		return f.Sources
	}
	if f.Type == behavior.FirewallMismatch {
		return []string{string(behavior.FromExternal)}
	}
	var out []string
	for _, c := range behavior.SourceClasses {
		out = append(out, string(c))
	}
	return out
}
