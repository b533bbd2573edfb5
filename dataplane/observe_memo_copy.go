package dataplane

import (
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// A memo holds every frontend of a node from one check to the next, the
// whole of the next check included: tens of megabytes on a node of ten
// thousand Services, unless packed. A group's frontends are packed
// (packer) with their outcomes in a slice rather than a map, their
// strings cloned once each, and equal lists of backends (a Service's
// frontends and source classes mostly reach the same) kept once, in the
// order a table sorts them in. A frontend taken from the memo (unpack)
// has its own map of outcomes and shares the memo's lists of backends, as
// the expected tables share theirs: a table's backends are not changed
// once it is made, and its Sort leaves sorted lists as they are.

// memoFrontend is a frontend as a memo keeps it: f without its outcomes,
// which outcomes hold (nil where f had none).
type memoFrontend struct {
	f        behavior.Frontend
	outcomes []memoOutcome
}

type memoOutcome struct {
	class behavior.SourceClass
	o     behavior.Outcome
}

// packer packs one group's frontends for a memo, which outlives the
// state: their strings are cloned, for a walk's may be parts of a dump's
// text, which they would keep in memory.
type packer struct {
	strs     map[string]string
	backends [][]behavior.Backend
	sorted   []behavior.Backend // scratch
}

func newPacker() *packer { return &packer{strs: map[string]string{}} }

// str is s cloned, once for the group.
func (p *packer) str(s string) string {
	if s == "" {
		return ""
	}
	if c, ok := p.strs[s]; ok {
		return c
	}
	c := strings.Clone(s)
	p.strs[c] = c
	return c
}

func (p *packer) frontend(f behavior.Frontend) memoFrontend {
	out := f
	out.Key.IP, out.Key.Protocol, out.Service = p.str(f.Key.IP), p.str(f.Key.Protocol), p.str(f.Service)
	out.SourceRanges = copyStrings(f.SourceRanges, p.str)
	out.Affinity = copyAffinity(f.Affinity)
	out.Outcomes = nil
	mf := memoFrontend{f: out}
	if f.Outcomes != nil {
		mf.outcomes = make([]memoOutcome, 0, len(f.Outcomes))
		for c, o := range f.Outcomes {
			mf.outcomes = append(mf.outcomes, memoOutcome{class: c, o: p.outcome(o)})
		}
	}
	return mf
}

func (p *packer) outcome(o behavior.Outcome) behavior.Outcome {
	out := copyOutcome(o, p.str)
	out.Backends = p.backendList(o.Backends)
	return out
}

// backendList is bs packed, sorted: the group's equal list when it has
// one.
func (p *packer) backendList(bs []behavior.Backend) []behavior.Backend {
	if bs == nil {
		return nil
	}
	p.sorted = append(p.sorted[:0], bs...)
	behavior.SortBackends(p.sorted)
	if k := equalList(p.backends, p.sorted); k != nil {
		return k
	}
	out := copyBackends(p.sorted, p.str)
	p.backends = append(p.backends, out)
	return out
}

// equalList is the list of lists equal to bs, or nil.
func equalList(lists [][]behavior.Backend, bs []behavior.Backend) []behavior.Backend {
	for _, l := range lists {
		if slices.EqualFunc(l, bs, sameBackend) {
			return l
		}
	}
	return nil
}

func sameBackend(a, b behavior.Backend) bool {
	return a.Endpoint == b.Endpoint && a.Probability == b.Probability &&
		a.HairpinMasquerade == b.HairpinMasquerade && slices.Equal(a.Rules, b.Rules)
}

// unpack is the frontend mf keeps, sharing only its lists of backends with
// the memo.
func (mf memoFrontend) unpack() behavior.Frontend {
	out := mf.f
	out.SourceRanges = slices.Clone(mf.f.SourceRanges)
	out.Affinity = copyAffinity(mf.f.Affinity)
	if mf.outcomes != nil {
		same := func(s string) string { return s }
		out.Outcomes = make(map[behavior.SourceClass]behavior.Outcome, len(mf.outcomes))
		for _, mo := range mf.outcomes {
			out.Outcomes[mo.class] = copyOutcome(mo.o, same)
		}
	}
	return out
}

func copyAffinity(a *behavior.Affinity) *behavior.Affinity {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// copyOutcome copies o but its backends, which it shares: its strings
// through str.
func copyOutcome(o behavior.Outcome, str func(string) string) behavior.Outcome {
	out := o
	out.MasqueradedBy, out.DecidedBy, out.Reason = str(o.MasqueradedBy), str(o.DecidedBy), str(o.Reason)
	out.Rules = copyRules(o.Rules, str)
	out.Assumed = copyStrings(o.Assumed, str)
	if o.Leftover != nil {
		l := *o.Leftover
		l.Reason = str(l.Reason)
		l.Rules = copyRules(l.Rules, str)
		out.Leftover = &l
	}
	return out
}

func copyBackends(bs []behavior.Backend, str func(string) string) []behavior.Backend {
	if bs == nil {
		return nil
	}
	out := make([]behavior.Backend, len(bs))
	for i, b := range bs {
		b.Endpoint = str(b.Endpoint)
		b.Rules = copyRules(b.Rules, str)
		out[i] = b
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
