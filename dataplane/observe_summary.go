package dataplane

import (
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// summary is what summarize has gathered of the branches so far.
type summary struct {
	n        int // the number of branches
	describe func(Hop) HopInfo
	o        behavior.Outcome
	// The backends in the order first reached, found by a scan while they
	// are few and by a map once they are many.
	backends       []behavior.Backend
	byEndpoint     map[string]int
	dropP, rejectP float64
	// unhandledP is the share of the branches no rule translated,
	// dropped or rejected; leftRules are the rules of the first branch
	// that reached no backend, leftReason its reason.
	unhandledP float64
	leftRules  []behavior.Rule
	leftReason string
	missing    []string
	masq       bool
	// byProxy: a masquerade on some branch is kube-proxy's; masqBy are the other
	// components' chains that masqueraded the rest.
	byProxy bool
	masqBy  []string
	// dnatBy is the rule of another component that translated every
	// branch that reached a backend, "" when some other did.
	dnatBy string
	dnats  int
}

// addBackend adds branch b's probability to backend ep's.
func (sm *summary) addBackend(ep string, b *Branch) {
	i := -1
	if sm.byEndpoint != nil {
		if j, ok := sm.byEndpoint[ep]; ok {
			i = j
		}
	} else {
		i = slices.IndexFunc(sm.backends, func(bk behavior.Backend) bool { return bk.Endpoint == ep })
	}
	if i < 0 {
		if sm.backends == nil {
			sm.backends = make([]behavior.Backend, 0, sm.n)
		}
		i = len(sm.backends)
		sm.backends = append(sm.backends, behavior.Backend{Endpoint: ep, Rules: hopRules(b.Hops, sm.describe)})
		if sm.byEndpoint != nil {
			sm.byEndpoint[ep] = i
		} else if len(sm.backends) == 32 {
			sm.byEndpoint = make(map[string]int, sm.n)
			for j, bk := range sm.backends {
				sm.byEndpoint[bk.Endpoint] = j
			}
		}
	}
	sm.backends[i].Probability += b.Probability
}

// add takes in one branch.
func (sm *summary) add(b *Branch) {
	o := &sm.o
	for _, n := range b.Notes {
		if !slices.Contains(o.Assumed, n) {
			o.Assumed = append(o.Assumed, n)
		}
	}
	// A verdict decides before a translation: a packet translated
	// to a backend and then dropped on its way (a FORWARD policy of
	// DROP, another component's rule) reaches no backend.
	switch {
	case b.Verdict != Reject && b.Verdict != Drop && b.DNAT != "":
		sm.addBackend(b.DNAT, b)
		if sm.dnats == 0 || b.DecidedBy == sm.dnatBy {
			sm.dnatBy = b.DecidedBy
		} else {
			sm.dnatBy = ""
		}
		sm.dnats++
		if b.Masquerade {
			sm.masq = true
			if b.MasqueradeBy == "" {
				sm.byProxy = true
			} else if !slices.Contains(sm.masqBy, b.MasqueradeBy) {
				sm.masqBy = append(sm.masqBy, b.MasqueradeBy)
			}
		}
	case b.MissingEndpoint:
		// One endpoint's chain: a backend, at an address not shown.
		sm.addBackend(MissingLabel(b.Missing, b.MissingAddr), b)
		if b.Masquerade {
			sm.masq, sm.byProxy = true, true
		}
	case b.Missing != "":
		if !slices.Contains(sm.missing, b.Missing) {
			sm.missing = append(sm.missing, b.Missing)
		}
		if o.Rules == nil {
			o.Rules = hopRules(b.Hops, sm.describe)
		}
	case b.Redirect != "":
		sm.addBackend("local:"+b.Redirect+" (userspace proxy)", b)
	case b.Verdict == Reject:
		sm.rejectP += b.Probability
		o.Reason, o.Rules, o.DecidedBy = b.Reason, hopRules(b.Hops, sm.describe), b.DecidedBy
		sm.left(b)
	case b.Verdict == Drop:
		sm.dropP += b.Probability
		if o.Reason == "" || sm.rejectP == 0 {
			o.Reason, o.Rules, o.DecidedBy = b.Reason, hopRules(b.Hops, sm.describe), b.DecidedBy
		}
		sm.left(b)
	default:
		sm.unhandledP += b.Probability
		sm.left(b)
	}
}

// left keeps the rules of the first branch that reached no backend.
func (sm *summary) left(b *Branch) {
	if sm.leftRules == nil {
		sm.leftRules, sm.leftReason = hopRules(b.Hops, sm.describe), b.Reason
		if sm.leftRules == nil {
			sm.leftRules = []behavior.Rule{}
		}
	}
}

// leftover is the share of the branches that reached no backend, when
// some did (nil: every branch did).
func (sm *summary) leftover() *behavior.Leftover {
	p := sm.unhandledP + sm.dropP + sm.rejectP
	if p < 1e-9 {
		return nil
	}
	l := &behavior.Leftover{Probability: round(p), Verdict: behavior.Unhandled, Reason: sm.leftReason, Rules: slices.Clip(sm.leftRules)}
	switch {
	case sm.unhandledP > 0:
		l.Reason = "no rule translates them: they leave kube-proxy's rules for the frontend's own address, where nothing answers"
	case sm.rejectP > 0:
		l.Verdict = behavior.Reject
	default:
		l.Verdict = behavior.Drop
	}
	return l
}

// decide sets the outcome's verdict once every branch is in.
func (sm *summary) decide(br []Branch) {
	o, backends := &sm.o, sm.backends
	switch {
	case len(backends) > 0:
		o.Verdict = behavior.Forward
		o.Reason, o.Rules, o.DecidedBy = "", nil, ""
		if len(sm.missing) == 0 {
			o.DecidedBy = sm.dnatBy
		}
		for i := range backends {
			backends[i].Probability = round(backends[i].Probability)
		}
		o.Backends = slices.Clip(backends)
		o.Masquerade = sm.masq
		if sm.masq && !sm.byProxy {
			o.MasqueradedBy = strings.Join(sm.masqBy, ", ")
		}
		o.Leftover = sm.leftover()
	case len(sm.missing) > 0:
		o.Verdict, o.DecidedBy = behavior.Unknown, ""
		o.Reason = "goes on in " + strings.Join(sm.missing, ", ") + ", whose rules the input does not show: its backends are not known"
	case sm.rejectP > 0:
		o.Verdict = behavior.Reject
	case sm.dropP > 0:
		o.Verdict = behavior.Drop
	default:
		o.Verdict = behavior.Unhandled
		if len(br) > 0 {
			o.Rules = hopRules(br[0].Hops, sm.describe)
		}
	}
}
