package analysis

import (
	"fmt"
	"slices"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wording"
)

// otherCopy reads the second copy of kube-proxy's rules the kernel runs
// (iptables' other backend) as the walked one was read, and says in the
// BackendSplitBrain finding what each copy gives. In the filter table
// both copies act, and a drop in either decides; in the nat table both
// hook PREROUTING and OUTPUT at priority -100, the kernel runs hooks of
// one priority in the order they were registered, and the first nat table
// that translates a new connection decides its backend: which copy that
// is depends on which table was set up first in the node's network
// namespace, which neither dump shows.
func (a *NodeAnalysis) otherCopy(in dataplane.ObserveInput) {
	cp, ok := a.Plane.(dataplane.Copies)
	if !ok {
		return
	}
	other, name := cp.Other()
	if other == nil {
		return
	}
	i := slices.IndexFunc(a.Findings, func(f behavior.Finding) bool { return f.Type == behavior.BackendSplitBrain })
	if i < 0 {
		return
	}
	walked := "the walked copy"
	if n, ok := a.Plane.(dataplane.BackendNamer); ok && n.Backend() != "" {
		walked = "the " + n.Backend() + " copy"
	}
	in.NoRules, in.HairpinDueOnly, in.Memo = true, true, nil
	theirs := Compare(a.Expected, dataplane.Observe(other, in))
	mine := 0
	for _, f := range a.Findings {
		if f.Type != behavior.BackendSplitBrain && len(f.Frontends) > 0 {
			mine++
		}
	}
	f := &a.Findings[i]
	f.Message += ". Which copy answers a new connection: in filter both act, and a drop in either decides; in nat both hook at priority -100, and the table the kernel registered first translates the connection, the other then does nothing, which neither dump shows"
	switch {
	case len(theirs) == 0 && mine == 0:
		f.Message += ". Both copies give every frontend kube-proxy's behaviour: whichever answers, the Services work now; the copy kube-proxy no longer writes is a leftover to remove, which will differ at the next change"
	default:
		var diffs []string
		for _, d := range theirs {
			diffs = append(diffs, d.Type+" "+d.Service)
		}
		f.Message += fmt.Sprintf(". The findings here are %s's; were the %s copy to answer, its rules would give %s", walked, name, wording.Count(len(theirs), "difference", "differences"))
		if len(diffs) > 0 {
			f.Message += " (" + listSome(diffs, 3) + ")"
		}
	}
}
