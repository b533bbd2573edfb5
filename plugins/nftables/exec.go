package nftables

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// hit is a set or map element a rule matched.
type hit struct {
	set string // "" for an anonymous set
	el  *Element
	// text describes a hit without an element (a client in an affinity
	// set); an element describes itself, when asked (desc).
	text string
}

// desc is the element that matched, as nft prints it.
func (h hit) desc() string {
	if h.el != nil {
		return h.el.String()
	}
	return h.text
}

// rctx is what one rule has gathered so far on a branch.
type rctx struct {
	prob float64
	hits []hit
	// via is the element whose verdict led into the current chain, or
	// (once the rule takes a verdict map's verdict) that element.
	via *hit
}

type outKind int

const (
	outNoMatch outKind = iota // a match failed: next rule
	outNext                   // the rule ran to its end (or continue)
	outAccept
	outVerdict // drop, reject, redirect
	outReturn
	outJump
	outGoto
)

type ruleOut struct {
	st     *state
	kind   outKind
	target string
	via    *hit
}

func ruleRef(t *Table, c *Chain, r *Rule) string {
	if r.Handle == 0 && strings.HasPrefix(r.Path, "line ") {
		// Read from the text form without handles (nft list ruleset).
		return fmt.Sprintf("%s %s at %s", t.ID(), c.Name, r.Path)
	}
	return fmt.Sprintf("%s %s handle %d", t.ID(), c.Name, r.Handle)
}

// stmts runs the statements of a rule from the i-th on.
func (k *walk) stmts(s *state, t *Table, c *Chain, r *Rule, i int, rc rctx) []ruleOut {
	if i == len(r.Stmts) {
		k.hop(s, t, c, r, rc)
		return s.one(ruleOut{st: s, kind: outNext})
	}
	next := func(s *state, rc rctx) []ruleOut { return k.stmts(s, t, c, r, i+1, rc) }
	switch st := r.Stmts[i].(type) {
	case *Match:
		return k.matchStmt(s, t, c, r, i, rc, st)
	case *VMap:
		return k.vmapStmt(s, t, c, r, rc, st)
	case *Verdict:
		return k.verdict(s, t, c, r, st, rc)
	case *Mangle:
		return k.mangleStmt(s, t, c, r, i, rc, st)
	case *NAT:
		return k.nat(s, t, c, r, st, rc)
	case *Reject:
		s.verdict = dataplane.Reject
		k.hop(s, t, c, r, rc)
		s.reason = reason(t, c, r, rc.via, s.verdict)
		s.decidedBy = othersVerdict(t, c, r)
		return s.one(ruleOut{st: s, kind: outVerdict})
	case *SetStmt:
		k.setStmt(s, t, st)
		return next(s, rc)
	case *CounterStmt, *Log, *Limit:
		return next(s, rc)
	case *Notrack:
		s.untracked = true
		return next(s, rc)
	case *XT:
		if st.Type == "match" && st.Name == "comment" {
			return next(s, rc)
		}
		if st.Type == "target" && st.Name == "REJECT" {
			// Its options choose only the ICMP error: a reject whatever
			// they are (iptables-nft writes -j REJECT so).
			s.verdict = dataplane.Reject
			k.hop(s, t, c, r, rc)
			s.reason = reason(t, c, r, rc.via, s.verdict)
			s.decidedBy = othersVerdict(t, c, r)
			return s.one(ruleOut{st: s, kind: outVerdict})
		}
		s.note("%s: iptables-nft %s %q cannot be evaluated (nft does not show its options); rule assumed not to match", ruleRef(t, c, r), st.Type, st.Name)
		return s.one(ruleOut{st: s, kind: outNoMatch})
	case *Unknown:
		s.note("%s: %s not understood; rule assumed not to match", ruleRef(t, c, r), st.Raw)
		return s.one(ruleOut{st: s, kind: outNoMatch})
	}
	s.note("%s: statement %s not evaluated; rule assumed not to match", ruleRef(t, c, r), r.Stmts[i])
	return s.one(ruleOut{st: s, kind: outNoMatch})
}

// split tests every alternative of a value: those that pass become
// alternatives marked 1 that carry the element matched (last in their
// hits, when there is one), and those that fail fold into one alternative
// marked 0, since they all go on with the next rule alike.
func (k *walk) split(alts []alt, test func(alt) *hit) []alt {
	var out []alt
	miss := 0.0
	for _, a := range alts {
		h := test(a)
		if h == nil {
			miss += a.p
			continue
		}
		a.v = value{kind: vInt, n: 1}
		if h.text != "" || h.el != nil {
			a.hits = append(a.hits[:len(a.hits):len(a.hits)], *h)
		}
		out = append(out, a)
	}
	if miss > 0 || len(out) == 0 {
		out = append(out, alt{v: value{kind: vInt}, p: miss})
	}
	return out
}

// fork runs f on every alternative of a value; alternatives with a
// probability below 1 (numgen) each get a copy of the branch.
func (k *walk) fork(s *state, alts []alt, rc rctx, f func(*state, alt, rctx) []ruleOut) []ruleOut {
	if len(alts) == 1 {
		a := alts[0]
		rc.hits = append(rc.hits[:len(rc.hits):len(rc.hits)], a.hits...)
		return f(s, a, rc)
	}
	if k.forks+len(alts) > maxBranches {
		s.note("more than %d branches: only the first alternative of %s was followed", maxBranches, alts[0].v)
		alts = alts[:1]
	}
	k.forks += len(alts)
	var out []ruleOut
	for i, a := range alts {
		st := s
		if i < len(alts)-1 {
			st = s.clone()
		}
		st.prob *= a.p
		rc2 := rc
		rc2.prob *= a.p
		rc2.hits = append(rc.hits[:len(rc.hits):len(rc.hits)], a.hits...)
		out = append(out, f(st, a, rc2)...)
	}
	return out
}

// hop records a rule the packet matched.
func (k *walk) hop(s *state, t *Table, c *Chain, r *Rule, rc rctx) {
	if s.opts.NoHops {
		return
	}
	h := dataplane.Hop{Table: t.ID(), Chain: c.Name, Line: r.Handle, Rule: r.Text()}
	if rc.prob < 1 {
		h.Probability = rc.prob
	}
	texts := make([]string, 0, len(rc.hits))
	for _, x := range rc.hits {
		texts = append(texts, x.desc())
	}
	h.Element = strings.Join(texts, "; ")
	s.hops = append(s.hops, h)
}

func (k *walk) verdict(s *state, t *Table, c *Chain, r *Rule, v *Verdict, rc rctx) []ruleOut {
	k.hop(s, t, c, r, rc)
	switch v.Kind {
	case "accept":
		return s.one(ruleOut{st: s, kind: outAccept})
	case "drop":
		s.verdict = dataplane.Drop
		s.reason = reason(t, c, r, rc.via, s.verdict)
		s.decidedBy = othersVerdict(t, c, r)
		return s.one(ruleOut{st: s, kind: outVerdict})
	case "continue":
		return s.one(ruleOut{st: s, kind: outNext})
	case "return":
		return s.one(ruleOut{st: s, kind: outReturn})
	case "jump":
		return s.one(ruleOut{st: s, kind: outJump, target: v.Target, via: rc.via})
	case "goto":
		return s.one(ruleOut{st: s, kind: outGoto, target: v.Target, via: rc.via})
	}
	s.note("%s: verdict %q not known; taken as continue", ruleRef(t, c, r), v.Kind)
	return s.one(ruleOut{st: s, kind: outNext})
}

// othersVerdict describes a rule that drops or rejects in another table
// than kube-proxy's (a firewall's, a CNI's, one written by hand), "" for
// kube-proxy's own and for chains of Kubernetes that iptables-nft wrote
// (KUBE-*). The table's name tells its component (inet firewalld).
func othersVerdict(t *Table, c *Chain, r *Rule) string {
	if t.Name == kubeProxyTable || strings.HasPrefix(c.Name, "KUBE-") {
		return ""
	}
	by := fmt.Sprintf("the rule of table %s, chain %s (%s)", t.ID(), c.Name, r.Text())
	switch owner := iptables.ChainOwner(c.Name); {
	case owner != "":
		by += " (" + owner + ")"
	case t.Name == "firewalld":
		by += " (firewalld)"
	}
	return by
}

// reason explains a drop or reject from kube-proxy's own words: the rule's
// comment, else the comment of the map element whose verdict led here
// (kube-proxy's no-endpoint maps name the service port), else the rule.
func reason(t *Table, c *Chain, r *Rule, via *hit, v dataplane.Verdict) string {
	if r.Comment != "" {
		return r.Comment
	}
	if via != nil && via.el != nil && via.el.Comment != "" {
		if strings.HasPrefix(via.set, "no-endpoint-") {
			if v == dataplane.Reject {
				return via.el.Comment + " has no endpoints"
			}
			return via.el.Comment + " has no local endpoints"
		}
		return via.el.Comment
	}
	return fmt.Sprintf("%s %s: %s", t.ID(), c.Name, r.Text())
}
