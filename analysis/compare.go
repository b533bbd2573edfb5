package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

// weightTolerance absorbs the quantisation of iptables' probabilities.
const weightTolerance = 1e-4

// Compare returns the behavioural differences between an expected and an
// observed table of one node. It does not look at rule text, so a change
// of kube-proxy's layout between releases raises nothing.
func Compare(expected, observed *behavior.Table) []behavior.Finding {
	node := expected.Node
	if node == "" {
		node = observed.Node
	}
	observedAt, expectedAt := observed.Index(), expected.Index()
	// Each frontend is compared on its own: a large node's on every CPU.
	out := inRuns(len(expected.Frontends), compareRun, func(out []behavior.Finding, i int) []behavior.Finding {
		e := expected.Frontends[i]
		o, ok := observedAt[e.Key]
		if !ok {
			o = &behavior.Frontend{Key: e.Key, Outcomes: map[behavior.SourceClass]behavior.Outcome{}}
		}
		return append(out, compareFrontend(node, e, *o)...)
	})
	for _, o := range observed.Frontends {
		if _, ok := expectedAt[o.Key]; ok || !handled(o) {
			continue
		}
		out = append(out, behavior.Finding{
			Type: behavior.StaleFrontend, Node: node, Service: o.Service,
			Frontends: []string{o.Key.String()},
			Expected:  "no frontend", Observed: describe(anyOutcome(o)),
			Rules:   behavior.RuleTexts(anyOutcome(o).Rules),
			Message: fmt.Sprintf("%s is still handled by the kernel, but no Service port of the API asks for it", o.Key),
		})
	}
	return groupForeign(behavior.Merge(out))
}

// groupForeign makes one ForeignVerdict of those that name the same rule
// on a node: one rule of another component (a FORWARD policy of DROP)
// decides every frontend's connections from a source, and is one cause.
func groupForeign(fs []behavior.Finding) []behavior.Finding {
	at := map[string]int{}
	services := map[int][]string{}
	out := fs[:0]
	for _, f := range fs {
		if f.Type != behavior.ForeignVerdict {
			out = append(out, f)
			continue
		}
		k := f.Node + "\x00" + f.Observed
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			services[len(out)] = []string{f.Service}
			out = append(out, f)
			continue
		}
		g := &out[i]
		g.Frontends = appendNew(g.Frontends, f.Frontends...)
		g.Sources = appendNew(g.Sources, f.Sources...)
		if !slices.Contains(services[i], f.Service) {
			services[i] = append(services[i], f.Service)
		}
		if g.Expected != f.Expected {
			g.Expected = "kube-proxy's rules decide"
		}
	}
	for i, svcs := range services {
		g := &out[i]
		if len(svcs) == 1 && len(g.Frontends) == 1 && len(g.Sources) <= 1 {
			continue
		}
		if len(svcs) > 1 {
			g.Service = ""
		}
		verdict, by, _ := strings.Cut(g.Observed, " by ")
		does := verdict + "s"
		if to, ok := strings.CutPrefix(verdict, "forward to "); ok {
			does = "translates, to " + to + ","
		}
		g.Message = fmt.Sprintf("kube-proxy's rules for %s of %s are right, but %s %s their connections from %s sources first: not kube-proxy's verdict",
			wording.Count(len(g.Frontends), "frontend", "frontends"), wording.Count(len(svcs), "Service", "Services"),
			by, does, wording.And(g.Sources))
	}
	return out
}

// appendNew appends to "to" the values of add it does not hold yet.
func appendNew(to []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(to, a) {
			to = append(to, a)
		}
	}
	return to
}

// compareRun is the fewest frontends a CPU compares: a smaller node's are
// not worth a goroutine.
const compareRun = 2048

func handled(f behavior.Frontend) bool {
	for _, o := range f.Outcomes {
		if o.Verdict != behavior.Unhandled && o.Verdict != "" {
			return true
		}
	}
	return false
}

func forwards(f behavior.Frontend) bool {
	for _, o := range f.Outcomes {
		if o.Verdict == behavior.Forward {
			return true
		}
	}
	return false
}

func anyOutcome(f behavior.Frontend) behavior.Outcome {
	for _, c := range behavior.SourceClasses {
		if o, ok := f.Outcomes[c]; ok && o.Verdict != behavior.Unhandled {
			return o
		}
	}
	return behavior.Outcome{Verdict: behavior.Unhandled}
}

func compareFrontend(node string, e, o behavior.Frontend) []behavior.Finding {
	// Most frontends have no finding: the key is named only for one.
	mk := func(typ string, classes []behavior.SourceClass, exp, obs string, rules []behavior.Rule, msg string) behavior.Finding {
		f := behavior.Finding{Node: node, Service: e.Service, Frontends: []string{e.Key.String()}}
		f.Type, f.Expected, f.Observed, f.Rules, f.Message = typ, exp, obs, behavior.RuleTexts(rules), msg
		for _, c := range classes {
			f.Sources = append(f.Sources, string(c))
		}
		return f
	}
	if handled(e) && !handled(o) {
		return []behavior.Finding{mk(behavior.MissingFrontend, nil, describe(anyOutcome(e)), "no rule handles it",
			nil, fmt.Sprintf("the kernel has no rule for %s of %s", e.Key, e.Service))}
	}
	if handled(e) && !o.Listed && !forwards(o) {
		// Only a catch-all acts on it (nftables rejects unknown ports of
		// known ClusterIPs): the frontend itself is missing.
		obs := describe(anyOutcome(o))
		return []behavior.Finding{mk(behavior.MissingFrontend, nil, describe(anyOutcome(e)), "no rule of its own: "+obs,
			anyOutcome(o).Rules, fmt.Sprintf("the kernel has no rule for %s of %s; a catch-all gives %s", e.Key, e.Service, obs))}
	}
	out, rangesDiffer := compareFirewall(mk, e, o)
	forwardBoth := false
	for _, c := range behavior.SourceClasses {
		eo, oo := e.Outcomes[c], o.Outcomes[c]
		if oo.Verdict == "" {
			oo.Verdict = behavior.Unhandled
		}
		if rangesDiffer && eo.Verdict != oo.Verdict && (eo.Verdict == behavior.Drop || oo.Verdict == behavior.Drop) {
			continue
		}
		fs, forward := compareClass(mk, e, c, eo, oo)
		out = append(out, fs...)
		forwardBoth = forwardBoth || forward
	}
	out = policyExplainsMasquerade(out)
	if forwardBoth {
		if a, b := affinity(e.Affinity), affinity(o.Affinity); a != b {
			out = append(out, mk(behavior.AffinityMismatch, nil, a, b, nil,
				fmt.Sprintf("session affinity of %s is %s, should be %s", e.Key, b, a)))
		}
	}
	return out
}

// compareFirewall compares the source ranges a frontend lets through.
// rangesDiffer is true when they differ, or a source outside them is
// not stopped.
func compareFirewall(mk mkFunc, e, o behavior.Frontend) (out []behavior.Finding, rangesDiffer bool) {
	// A firewall that allows other sources explains every drop it causes:
	// one FirewallMismatch says it, not a verdict mismatch per class.
	rangesDiffer = ranges(e.SourceRanges) != ranges(o.SourceRanges)
	if rangesDiffer && (len(e.SourceRanges) > 0 || len(o.SourceRanges) > 0) {
		out = append(out, mk(behavior.FirewallMismatch, nil, ranges(e.SourceRanges), ranges(o.SourceRanges), nil,
			fmt.Sprintf("sources allowed to %s are %s, should be %s", e.Key, ranges(o.SourceRanges), ranges(e.SourceRanges))))
	} else if len(e.SourceRanges) > 0 && e.OutsideRanges != o.OutsideRanges {
		// The same ranges are let through, but a source outside them
		// is not stopped: the firewall's drop rule is gone.
		exp, obs := outsideRanges(e.OutsideRanges), outsideRanges(o.OutsideRanges)
		out = append(out, mk(behavior.FirewallMismatch, nil, ranges(e.SourceRanges)+"; "+exp, ranges(o.SourceRanges)+"; "+obs, anyOutcome(o).Rules,
			fmt.Sprintf("a source outside %s gets %s at %s, should get %s", ranges(e.SourceRanges), obs, e.Key, exp)))
		rangesDiffer = true
	}
	return out, rangesDiffer
}

// compareClass compares the expected and observed outcomes of frontend e
// for the sources of class c. forward is true when both forward (through
// kube-proxy's rules).
func compareClass(mk mkFunc, e behavior.Frontend, c behavior.SourceClass, eo, oo behavior.Outcome) (out []behavior.Finding, forward bool) {
	cls := []behavior.SourceClass{c}
	switch {
	case oo.Verdict == behavior.Unknown:
		// The path leaves what the input holds: nothing to compare.
	case eo.Verdict == behavior.Forward && oo.Verdict == behavior.Forward && oo.DecidedBy != "" && !sameSet(backendsOf(eo), backendsOf(oo)):
		// Another component's DNAT took the connection first.
		out = append(out, mk(behavior.ForeignVerdict, cls, "forward by kube-proxy's rules", "forward to "+backendList(oo)+" by "+oo.DecidedBy,
			append([]behavior.Rule{{Text: oo.DecidedBy}}, oo.Rules...),
			fmt.Sprintf("connections from %s to %s should get %s, but %s translates them first, to %s", sourceName(c), e.Key, describe(eo), oo.DecidedBy, backendList(oo))))
	case eo.Verdict == behavior.Forward && oo.Verdict == behavior.Forward:
		forward = true
		fs, policy := compareBackends(mk, e, c, eo, oo)
		out = append(out, fs...)
		if l := oo.Leftover; l != nil && eo.Leftover == nil {
			out = append(out, blackHoled(mk, cls, e, l))
		}
		// Another component's masquerade (a CNI's, of pod traffic
		// leaving the pod network) is no drift of kube-proxy's rules.
		if !policy && eo.Masquerade != oo.Masquerade && (eo.Masquerade || oo.MasqueradedBy == "") {
			out = append(out, mk(behavior.MasqueradeMismatch, cls, masq(eo.Masquerade), masq(oo.Masquerade), oo.Rules,
				fmt.Sprintf("connections from %s to %s are %s, should be %s", sourceName(c), e.Key, masq(oo.Masquerade), masq(eo.Masquerade))))
		}
	case eo.Verdict == oo.Verdict:
		// Both reject, both drop, or both unhandled.
	case oo.DecidedBy != "" && (oo.Verdict == behavior.Drop || oo.Verdict == behavior.Reject):
		// Not kube-proxy's verdict: another component's rule, or a
		// built-in chain's policy, decides first (groupForeign).
		// The deciding rule first: the path's last, or the policy
		// (no rule of the path).
		rules := oo.Rules
		if n := len(rules); n > 0 && strings.Contains(oo.DecidedBy, rules[n-1].Text) {
			rules = append([]behavior.Rule{rules[n-1]}, rules[:n-1]...)
		} else {
			rules = append([]behavior.Rule{{Text: oo.DecidedBy}}, rules...)
		}
		out = append(out, mk(behavior.ForeignVerdict, cls, string(eo.Verdict)+" by kube-proxy's rules",
			string(oo.Verdict)+" by "+oo.DecidedBy, rules,
			fmt.Sprintf("connections from %s to %s should get %s, but %s %ss them first", sourceName(c), e.Key, describe(eo), oo.DecidedBy, oo.Verdict)))
	case oo.Verdict == behavior.Unhandled:
		out = append(out, mk(behavior.MissingFrontend, cls, describe(eo), "no rule handles it", nil,
			fmt.Sprintf("connections from %s to %s pass untouched; expected %s", sourceName(c), e.Key, describe(eo))))
	case eo.Verdict == behavior.Forward && !strings.Contains(oo.Reason, e.Service):
		// Rejected or dropped by a rule that is not the Service's own
		// (a catch-all after its chain lost its rules): every backend
		// is unreachable on this path.
		for _, b := range eo.Backends {
			out = append(out, withEndpoint(mk(behavior.MissingEndpoint, nil, b.Endpoint, "absent", append(append([]behavior.Rule(nil), b.Rules...), oo.Rules...),
				fmt.Sprintf("endpoint %s of %s gets no traffic on this node: connections to %s meet %s", b.Endpoint, e.Service, e.Key, describe(oo))), b.Endpoint))
		}
	case e.LocalOnly && (eo.Verdict == behavior.Drop || oo.Verdict == behavior.Drop):
		out = append(out, mk(behavior.LocalPolicyMismatch, cls, describe(eo), describe(oo), oo.Rules,
			fmt.Sprintf("traffic policy Local: %s to %s should get %s, gets %s", sourceName(c), e.Key, describe(eo), describe(oo))))
	default:
		out = append(out, mk(behavior.NoEndpointsRuleMismatch, cls, describe(eo), describe(oo), append(oo.Rules, eo.Rules...),
			fmt.Sprintf("%s to %s should get %s, gets %s", sourceName(c), e.Key, describe(eo), describe(oo))))
	}
	return out, forward
}

// withEndpoint names the endpoint a finding is about.
func withEndpoint(f behavior.Finding, ep string) behavior.Finding {
	f.Endpoint = ep
	return f
}

type mkFunc func(string, []behavior.SourceClass, string, string, []behavior.Rule, string) behavior.Finding

// compareBackends compares where one class's connections go; policy is
// true when the difference is a traffic-policy one (which also explains a
// masquerade difference).
func compareBackends(mk mkFunc, e behavior.Frontend, c behavior.SourceClass, eo, oo behavior.Outcome) (fs []behavior.Finding, policy bool) {
	cls := []behavior.SourceClass{c}
	em, om := backendsOf(eo), backendsOf(oo)
	if e.LocalOnly && c == behavior.FromExternal && !sameSet(em, om) {
		return []behavior.Finding{mk(behavior.LocalPolicyMismatch, cls, backendList(eo), backendList(oo), nil,
			fmt.Sprintf("traffic policy Local: external connections to %s should reach only this node's endpoints %s, reach %s", e.Key, backendList(eo), backendList(oo)))}, true
	}
	if !e.LocalOnly && c == behavior.FromExternal && eo.Masquerade && !oo.Masquerade && subset(om, em) && !sameSet(em, om) {
		return []behavior.Finding{mk(behavior.LocalPolicyMismatch, cls, "Cluster: "+backendList(eo), "Local: "+backendList(oo), nil,
			fmt.Sprintf("external connections to %s are kept on this node's endpoints without masquerade, as under traffic policy Local; the policy is Cluster", e.Key))}, true
	}
	var out []behavior.Finding
	for i, b := range eo.Backends {
		if _, ok := om.at(i, b.Endpoint); !ok {
			out = append(out, withEndpoint(mk(behavior.MissingEndpoint, nil, b.Endpoint, "absent", b.Rules,
				fmt.Sprintf("endpoint %s of %s gets no traffic on this node", b.Endpoint, e.Service)), b.Endpoint))
		}
	}
	for i, b := range oo.Backends {
		if _, ok := em.at(i, b.Endpoint); !ok {
			out = append(out, withEndpoint(mk(behavior.StaleEndpoint, nil, "absent", b.Endpoint, b.Rules,
				fmt.Sprintf("%s of %s still sends traffic to %s, which is not a usable endpoint", e.Key, e.Service, b.Endpoint)), b.Endpoint))
		}
	}
	if len(out) > 0 {
		return out, false
	}
	for i, b := range eo.Backends {
		ob, _ := om.at(i, b.Endpoint)
		if d := b.Probability - ob.Probability; d > weightTolerance || d < -weightTolerance {
			out = append(out, mk(behavior.WeightMismatch, cls, backendList(eo), backendList(oo), ob.Rules,
				fmt.Sprintf("%s spreads connections as %s, should be %s", e.Key, backendList(oo), backendList(eo))))
			break
		}
	}
	for i, b := range eo.Backends {
		if ob, _ := om.at(i, b.Endpoint); c == behavior.FromPod && b.HairpinMasquerade && !ob.HairpinMasquerade {
			out = append(out, mk(behavior.MasqueradeMismatch, cls, "hairpin masquerade for "+b.Endpoint, "no hairpin masquerade", ob.Rules,
				fmt.Sprintf("a pod reaching itself (%s) through %s is not masqueraded, so its replies bypass the NAT", b.Endpoint, e.Key)))
		}
	}
	return out, false
}

// backends are an outcome's backends by endpoint: found by a scan while
// few (a frontend's usual ten, without a map per comparison), by a map once
// many.
type backends struct {
	list []behavior.Backend
	m    map[string]int
}

func backendsOf(o behavior.Outcome) backends {
	b := backends{list: o.Backends}
	if len(o.Backends) > 16 {
		b.m = make(map[string]int, len(o.Backends))
		for i, x := range o.Backends {
			if _, ok := b.m[x.Endpoint]; !ok {
				b.m[x.Endpoint] = i
			}
		}
	}
	return b
}

// get is the backend of that endpoint.
func (b backends) get(ep string) (behavior.Backend, bool) {
	i := -1
	if b.m != nil {
		if j, ok := b.m[ep]; ok {
			i = j
		}
	} else {
		i = slices.IndexFunc(b.list, func(x behavior.Backend) bool { return x.Endpoint == ep })
	}
	if i < 0 {
		return behavior.Backend{}, false
	}
	return b.list[i], true
}

// at is the backend of that endpoint, looked for first at index i: the
// two sides of a healthy frontend list the same endpoints in the same
// order. Each side names an endpoint once (the model's endpoints are a
// set, and a walk's backends are summed per endpoint), so the backend at
// i is the one get finds.
func (b backends) at(i int, ep string) (behavior.Backend, bool) {
	if i < len(b.list) && b.list[i].Endpoint == ep {
		return b.list[i], true
	}
	return b.get(ep)
}

// subset reports whether every endpoint of a is one of b's.
func subset(a, b backends) bool {
	for i, x := range a.list {
		if _, ok := b.at(i, x.Endpoint); !ok {
			return false
		}
	}
	return true
}

// sameSet reports whether a and b have the same endpoints.
func sameSet(a, b backends) bool {
	return subset(a, b) && subset(b, a)
}

func backendList(o behavior.Outcome) string {
	var parts []string
	for _, b := range o.Backends {
		parts = append(parts, fmt.Sprintf("%s@%s", b.Endpoint, behavior.FormatProbability(b.Probability)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func describe(o behavior.Outcome) string {
	switch o.Verdict {
	case behavior.Forward:
		return "forward to " + backendList(o)
	case behavior.Reject, behavior.Drop, behavior.Unknown:
		if o.Reason != "" {
			return fmt.Sprintf("%s (%s)", o.Verdict, o.Reason)
		}
		return string(o.Verdict)
	case "":
		return string(behavior.Unhandled)
	}
	return string(o.Verdict)
}

// sourceName is a source class in a sentence: "a pod source", "an
// external source".
func sourceName(c behavior.SourceClass) string {
	if c == behavior.FromExternal {
		return "an external source"
	}
	return "a " + string(c) + " source"
}

// outsideRanges says what happens to a source outside the allowed ranges.
func outsideRanges(v behavior.Verdict) string {
	switch v {
	case behavior.Unhandled, "":
		return "others pass untouched"
	case behavior.Forward:
		return "others are forwarded"
	case behavior.Reject:
		return "others rejected"
	}
	return "others dropped"
}

func masq(b bool) string {
	if b {
		return "masqueraded"
	}
	return "not masqueraded"
}

func affinity(a *behavior.Affinity) string {
	if a == nil {
		return "none"
	}
	return fmt.Sprintf("ClientIP %ds", a.TimeoutSeconds)
}

func ranges(r []string) string {
	if len(r) == 0 {
		return "any source"
	}
	s := append([]string(nil), r...)
	sort.Strings(s)
	return strings.Join(s, ",")
}

// policyExplainsMasquerade drops the masquerade differences of a frontend
// whose traffic policy differs: the policy decides masquerading too (ETP
// Local keeps client addresses, and short-circuits pod traffic).
func policyExplainsMasquerade(fs []behavior.Finding) []behavior.Finding {
	policy := false
	for _, f := range fs {
		if f.Type == behavior.LocalPolicyMismatch {
			policy = true
		}
	}
	if !policy {
		return fs
	}
	var out []behavior.Finding
	for _, f := range fs {
		if f.Type != behavior.MasqueradeMismatch {
			out = append(out, f)
		}
	}
	return out
}

// othersMasquerade notes the connections that other components' chains
// masquerade where kube-proxy's rules would not (a CNI masquerading pod
// traffic to an endpoint outside the pod network): one note per chain,
// naming the frontends and source classes.
func othersMasquerade(expected, observed *behavior.Table) []string {
	if expected == nil || observed == nil {
		return nil
	}
	want := map[behavior.Key]*behavior.Frontend{}
	for i := range expected.Frontends {
		want[expected.Frontends[i].Key] = &expected.Frontends[i]
	}
	byChain := map[string][]string{}
	var chains []string
	for _, f := range observed.Frontends {
		e := want[f.Key]
		if e == nil {
			continue
		}
		for _, c := range behavior.SourceClasses {
			oo, eo := f.Outcomes[c], e.Outcomes[c]
			if oo.MasqueradedBy == "" || eo.Masquerade || eo.Verdict != behavior.Forward {
				continue
			}
			if byChain[oo.MasqueradedBy] == nil {
				chains = append(chains, oo.MasqueradedBy)
			}
			byChain[oo.MasqueradedBy] = append(byChain[oo.MasqueradedBy], fmt.Sprintf("%s from %s", f.Key, sourceName(c)))
		}
	}
	slices.Sort(chains)
	var notes []string
	for _, ch := range chains {
		notes = append(notes, fmt.Sprintf("%s, another component's chain, masquerades connections kube-proxy's rules do not (%s): not kube-proxy's drift",
			ch, listSome(byChain[ch], 3)))
	}
	return notes
}

// blackHoled is the finding of a share of a frontend's connections that
// reach no backend, with the Service's own rules on that share's path.
func blackHoled(mk mkFunc, cls []behavior.SourceClass, e behavior.Frontend, l *behavior.Leftover) behavior.Finding {
	share := behavior.FormatProbability(l.Probability)
	fate := map[behavior.Verdict]string{behavior.Drop: "dropped", behavior.Reject: "rejected"}[l.Verdict]
	if fate == "" {
		fate = "left untranslated"
	}
	var rules []behavior.Rule
	for _, r := range l.Rules {
		if !r.Shared {
			rules = append(rules, r)
		}
	}
	if rules == nil {
		rules = l.Rules
	}
	return mk(behavior.BlackHoledTraffic, cls, "every connection to a backend", share+" to no backend ("+fate+")", rules,
		fmt.Sprintf("%s of the connections to %s reach no backend: %s", share, e.Key, l.Reason))
}
