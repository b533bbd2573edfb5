package dataplane

import (
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// copyFrontend copies an observed frontend so that the copy shares no
// slice or map with it: a table's frontends are sorted and completed in
// place after the observation. own clones the strings too, for a memo that
// outlives the state: a walk's strings may be parts of a dump's text,
// which they would keep in memory.
func copyFrontend(f behavior.Frontend, own bool) behavior.Frontend {
	str := func(s string) string { return s }
	if own {
		str = strings.Clone
	}
	out := f
	out.Key.IP, out.Key.Protocol, out.Service = str(f.Key.IP), str(f.Key.Protocol), str(f.Service)
	out.SourceRanges = copyStrings(f.SourceRanges, str)
	if f.Affinity != nil {
		a := *f.Affinity
		out.Affinity = &a
	}
	if f.Outcomes != nil {
		out.Outcomes = make(map[behavior.SourceClass]behavior.Outcome, len(f.Outcomes))
		for c, o := range f.Outcomes {
			out.Outcomes[c] = copyOutcome(o, str)
		}
	}
	return out
}

func copyOutcome(o behavior.Outcome, str func(string) string) behavior.Outcome {
	out := o
	out.MasqueradedBy, out.DecidedBy, out.Reason = str(o.MasqueradedBy), str(o.DecidedBy), str(o.Reason)
	out.Rules = copyRules(o.Rules, str)
	out.Assumed = copyStrings(o.Assumed, str)
	if o.Backends != nil {
		out.Backends = make([]behavior.Backend, len(o.Backends))
		for i, b := range o.Backends {
			b.Endpoint = str(b.Endpoint)
			b.Rules = copyRules(b.Rules, str)
			out.Backends[i] = b
		}
	}
	if o.Leftover != nil {
		l := *o.Leftover
		l.Reason = str(l.Reason)
		l.Rules = copyRules(l.Rules, str)
		out.Leftover = &l
	}
	return out
}

func copyRules(rs []behavior.Rule, str func(string) string) []behavior.Rule {
	if rs == nil {
		return nil
	}
	out := slices.Clone(rs)
	for i := range out {
		r := &out[i]
		r.Table, r.Chain, r.Text, r.Element = str(r.Table), str(r.Chain), str(r.Text), str(r.Element)
		r.Service, r.Endpoint = str(r.Service), str(r.Endpoint)
	}
	return out
}

func copyStrings(ss []string, str func(string) string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = str(s)
	}
	return out
}

func cloneStrings(ss []string) []string { return copyStrings(ss, strings.Clone) }
