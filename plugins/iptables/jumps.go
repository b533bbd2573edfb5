package iptables

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

// entryJump is one of the rules by which kube-proxy's iptables mode leads
// packets from a built-in chain into its own chains (iptablesJumpChains
// in kube-proxy, the same list in every release of the window, 1.30 to
// 1.37). It writes them in a full sync; only something else removes them:
// a flush of the table (iptables -t nat -F, a firewall service's reload),
// or a hand.
type entryJump struct {
	table, hook, target string
	// sources are the source classes whose Service packets find no
	// kube-proxy rule without the jump (nil: no behaviour a walk compares
	// depends on it alone, such as the masquerade or filter jumps).
	sources []behavior.SourceClass
}

// entryJumps are iptables mode's jumps, in the order kube-proxy lists
// them for each table.
var entryJumps = []entryJump{
	{"filter", "INPUT", "KUBE-PROXY-FIREWALL", nil},
	{"filter", "INPUT", "KUBE-NODEPORTS", nil},
	{"filter", "INPUT", "KUBE-EXTERNAL-SERVICES", nil},
	{"filter", "FORWARD", "KUBE-PROXY-FIREWALL", nil},
	{"filter", "FORWARD", "KUBE-FORWARD", nil},
	{"filter", "FORWARD", "KUBE-SERVICES", nil},
	{"filter", "FORWARD", "KUBE-EXTERNAL-SERVICES", nil},
	{"filter", "OUTPUT", "KUBE-PROXY-FIREWALL", nil},
	{"filter", "OUTPUT", "KUBE-SERVICES", nil},
	{"nat", "PREROUTING", "KUBE-SERVICES", []behavior.SourceClass{behavior.FromPod, behavior.FromExternal}},
	{"nat", "OUTPUT", "KUBE-SERVICES", []behavior.SourceClass{behavior.FromNode}},
	{"nat", "POSTROUTING", "KUBE-POSTROUTING", nil},
}

// jumpChecks are the MissingJumpRule findings of a whole dump of a node in
// iptables mode: for each table that holds kube-proxy's chains, the jumps
// from the built-in chains it lacks, one finding for each, or one for the
// table when it lacks them all (a flushed table). The finding's sources
// are those whose Service traffic the lost jumps leave to no rule of
// kube-proxy (analysis folds the findings of those sources under it).
// flushed are the tables whose kube-proxy chains were emptied too
// (alwaysFilled): their chains are unreachable because of it, not left
// behind, and TextChecks does not report them as orphans.
func jumpChecks(rs *Ruleset, node string) (out []behavior.Finding, flushed map[string]bool) {
	if rs.Excerpt != "" {
		return nil, nil
	}
	for _, tname := range []string{"filter", "nat"} {
		t := rs.Tables[tname]
		if t == nil || !holdsProxyChains(t) {
			continue
		}
		if tname == "filter" && t.Chain("KUBE-PROXY-FIREWALL") == nil {
			// The filter table's jumps changed over the releases before
			// KUBE-PROXY-FIREWALL (1.25); the nat table's did not.
			continue
		}
		var missing []entryJump
		var all int
		for _, j := range entryJumps {
			if j.table != tname {
				continue
			}
			if t.Chain(j.target) == nil {
				// Releases before 1.30 lack some of these chains and
				// their jumps (KUBE-PROXY-FIREWALL came in 1.25); a
				// flush keeps the chains, a deleted jump its chain.
				continue
			}
			all++
			if !jumpsTo(t.Chain(j.hook), j.target) {
				missing = append(missing, j)
			}
		}
		if len(missing) == 0 {
			continue
		}
		emptied := emptyChain(t.Chain(alwaysFilled[tname]))
		if emptied {
			if flushed == nil {
				flushed = map[string]bool{}
			}
			flushed[tname] = true
		}
		if len(missing) == all || emptied {
			out = append(out, tableJumpsFinding(t, node, missing, emptied))
			continue
		}
		for _, j := range missing {
			out = append(out, jumpFinding(t, node, j))
		}
	}
	return out, flushed
}

// holdsProxyChains: the table holds one of the chains kube-proxy's jumps
// lead to. Looked up by name: a large node's dump, read narrowly, makes
// only the chains asked for.
func holdsProxyChains(t *Table) bool {
	for _, j := range entryJumps {
		if t.Chain(j.target) != nil {
			return true
		}
	}
	return false
}

// ownChain: a chain of kube-proxy's that holds rules (not its canary, nor
// the kubelet's chains).
func ownChain(name string) bool {
	return ProxyChain(name) && !kubeletChain(name) && name != "KUBE-PROXY-CANARY"
}

// jumpsTo: some rule of chain c (nil: the dump lacks it) jumps to target.
func jumpsTo(c *Chain, target string) bool {
	if c == nil {
		return false
	}
	return slices.ContainsFunc(c.Rules(), func(r *Rule) bool { return r.Target == target })
}

// alwaysFilled are, by table, a chain kube-proxy always writes rules in:
// nat KUBE-SERVICES ends with its jump to KUBE-NODEPORTS, filter
// KUBE-FORWARD drops invalid packets and accepts marked and established
// ones. Empty, it was flushed.
var alwaysFilled = map[string]string{"nat": "KUBE-SERVICES", "filter": "KUBE-FORWARD"}

// emptyChain: the chain is there and holds no rule.
func emptyChain(c *Chain) bool { return c != nil && c.Len() == 0 }

// jumpFinding is one lost jump.
func jumpFinding(t *Table, node string, j entryJump) behavior.Finding {
	f := behavior.Finding{
		Type: behavior.MissingJumpRule, Node: node,
		Expected: "-A " + j.hook + " ... -j " + j.target,
		Observed: fmt.Sprintf("%s chain %s has no rule that jumps to %s", t.Name, j.hook, j.target),
		Rules:    hookRules(t, j.hook),
		Message: fmt.Sprintf("kube-proxy's jump from %s/%s to %s is gone, so %s. %s",
			t.Name, j.hook, j.target, jumpEffect(j), fullSyncOnly),
	}
	f.Sources = sourceNames(j.sources)
	return f
}

// tableJumpsFinding is a table that lost all of kube-proxy's jumps, or
// whose KUBE-SERVICES was emptied with them: a flush.
func tableJumpsFinding(t *Table, node string, missing []entryJump, emptied bool) behavior.Finding {
	var names, hooks []string
	var sources []behavior.SourceClass
	for _, j := range missing {
		names = append(names, j.hook+" -j "+j.target)
		if !slices.Contains(hooks, j.hook) {
			hooks = append(hooks, j.hook)
		}
		for _, s := range j.sources {
			if !slices.Contains(sources, s) {
				sources = append(sources, s)
			}
		}
	}
	obs := fmt.Sprintf("%s table: no jump from %s into kube-proxy's chains", t.Name, strings.Join(hooks, ", "))
	cause := "kube-proxy's jumps in the " + t.Name + " table were deleted"
	if emptied {
		n := 0
		for _, c := range t.chains() {
			if ownChain(c.Name) && c.Len() == 0 {
				n++
			}
		}
		obs += fmt.Sprintf(", and %s of kube-proxy's hold no rule", wording.Count(n, "chain", "chains"))
		cause = "the " + t.Name + " table was flushed (as by iptables -t " + t.Name + " -F or a firewall service's reload: every rule gone, the chains kept)"
	}
	var rules []string
	for _, h := range hooks {
		rules = append(rules, hookRules(t, h)...)
	}
	f := behavior.Finding{
		Type: behavior.MissingJumpRule, Node: node,
		Expected: strings.Join(names, "; "),
		Observed: obs,
		Rules:    rules,
		Message: fmt.Sprintf("%s: no packet enters kube-proxy's chains there, so its Service rules in it act on nothing. %s",
			cause, fullSyncOnly),
	}
	f.Sources = sourceNames(sources)
	return f
}

// fullSyncOnly says when kube-proxy writes its jumps again.
const fullSyncOnly = "kube-proxy writes its jumps only in a full sync: when it starts, when its canary chain KUBE-PROXY-CANARY disappears (a flush keeps chains, so it does not notice one), after a failed sync, and every hour (never, in a cluster over 1000 endpoints); until then they stay gone."

// jumpEffect says what a lost jump does to Service traffic.
func jumpEffect(j entryJump) string {
	switch {
	case j.table == "nat" && j.hook == "PREROUTING":
		return "packets from pods and from outside the node reach no Service rule: nothing DNATs them"
	case j.table == "nat" && j.hook == "OUTPUT":
		return "packets the node itself sends to a Service reach no Service rule: nothing DNATs them"
	case j.table == "nat":
		return "nothing masquerades what kube-proxy marked for it: replies from a backend on another node do not come back through this one"
	case j.target == "KUBE-SERVICES", j.target == "KUBE-EXTERNAL-SERVICES":
		return "Services without endpoints are no longer rejected there: their clients wait for a timeout"
	case j.target == "KUBE-PROXY-FIREWALL":
		return "loadBalancerSourceRanges are not enforced for packets that pass " + j.hook
	case j.target == "KUBE-FORWARD":
		return "kube-proxy's accept of forwarded Service traffic (and its drop of invalid packets) is gone: a FORWARD policy of DROP then drops it"
	}
	return "the health-check ports of Local-policy Services are no longer accepted there"
}

// hookRules are the rules a built-in chain holds now, as the dump has them
// (empty: "(no rule)").
func hookRules(t *Table, hook string) []string {
	c := t.Chain(hook)
	if c == nil || c.Len() == 0 {
		return []string{fmt.Sprintf("%s %s: no rule", t.Name, hook)}
	}
	var out []string
	for _, r := range c.Rules() {
		out = append(out, t.Name+" "+r.Raw)
	}
	return wording.FirstN(out, 5)
}

func sourceNames(cs []behavior.SourceClass) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return out
}
