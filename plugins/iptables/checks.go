package iptables

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wording"
)

// leftover chain names of other proxy modes: the userspace proxier and
// IPVS mode. In iptables mode their presence means a switch of mode left
// them behind.
var (
	userspaceChains = []string{"KUBE-PORTALS-CONTAINER", "KUBE-PORTALS-HOST", "KUBE-NODEPORT-CONTAINER", "KUBE-NODEPORT-HOST"}
	ipvsChains      = []string{"KUBE-LOAD-BALANCER", "KUBE-NODE-PORT", "KUBE-SOURCE-RANGES-FIREWALL", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER"}
)

// ipvsModeChains are, by table, the iptables chains kube-proxy keeps in
// ipvs mode: there they are the running proxy's, no leftover.
var ipvsModeChains = map[string][]string{
	"nat":    {"KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-NODE-PORT", "KUBE-LOAD-BALANCER", "KUBE-MARK-MASQ"},
	"filter": {"KUBE-FORWARD", "KUBE-NODE-PORT", "KUBE-PROXY-FIREWALL", "KUBE-SOURCE-RANGES-FIREWALL", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER"},
}

// perServicePrefixes are the chains kube-proxy creates per service port and
// endpoint; it deletes them when they are no longer needed.
var perServicePrefixes = []string{PrefixSVC, PrefixSVL, PrefixEXT, PrefixFW, PrefixSEP}

// TextChecks looks for what behaviour cannot show: kube-proxy's jumps
// from the built-in chains that are gone (jumpChecks), per-service chains
// no rule jumps to (kube-proxy failed to delete them), and chains left by
// the userspace proxier or IPVS mode. mode is kube-proxy's mode on the node
// ("" when unknown).
func TextChecks(rs *Ruleset, node, mode string) []behavior.Finding {
	var out []behavior.Finding
	inferred := mode == ""
	if inferred {
		mode = modeFromChains(rs)
	}
	orphans := rs.orphans()
	var left []leftChain
	var flushed map[string]bool
	if mode == "iptables" {
		out, flushed = jumpChecks(rs, node)
	}
	for _, tname := range rs.TableOrder {
		t := rs.Tables[tname]
		orphan := orphans[tname]
		if flushed[tname] {
			// Unreachable because the table was flushed: the jump
			// finding says so.
			orphan = nil
		}
		for _, c := range checkedChains(rs, t, orphan) {
			cname := c.Name
			if len(orphan) > 0 && orphan[0] == c.pos {
				orphan = orphan[1:]
				out = append(out, behavior.Finding{
					Type: behavior.OrphanChain, Node: node, Service: chainService(c),
					Expected: "no chain", Observed: fmt.Sprintf("%s chain %s with %d rules, unreachable", tname, cname, c.Len()),
					Rules:    chainRules(c),
					Endpoint: dnatTarget(c),
					Message:  fmt.Sprintf("chain %s/%s is not jumped to by any rule: kube-proxy did not clean it up", tname, cname),
				})
			}
			if kind := leftoverKind(cname, mode); kind != "" && mode != "" {
				left = append(left, leftChain{tname, kind, c})
			}
		}
	}
	return append(out, leftoverFindings(left, node, mode, inferred)...)
}

// leftChain is a chain of another proxy mode, in its table.
type leftChain struct {
	table, kind string
	c           *Chain
}

// leftoverFindings are one LeftoverRules for each table and proxy mode
// whose chains a dump holds: one switch of mode left them all.
func leftoverFindings(left []leftChain, node, mode string, inferred bool) []behavior.Finding {
	how := ""
	if inferred {
		how = " (inferred from the dump's chains: the mode was not given)"
	}
	var out []behavior.Finding
	for i := 0; i < len(left); {
		j, rules := i, 0
		var names, texts []string
		for ; j < len(left) && left[j].table == left[i].table && left[j].kind == left[i].kind; j++ {
			names = append(names, left[j].c.Name)
			texts = append(texts, chainRules(left[j].c)...)
			rules += left[j].c.Len()
		}
		tname, kind := left[i].table, left[i].kind
		obs := fmt.Sprintf("%s chain %s (%s) with %d rules", tname, names[0], kind, rules)
		msg := fmt.Sprintf("chain %s/%s belongs to the %s; it is a leftover on a node whose kube-proxy runs in %s mode%s", tname, names[0], kind, mode, how)
		if len(names) > 1 {
			obs = fmt.Sprintf("%s chains %s (%s) with %d rules", tname, strings.Join(names, ", "), kind, rules)
			msg = fmt.Sprintf("chains %s of table %s belong to the %s; they are leftovers on a node whose kube-proxy runs in %s mode%s", strings.Join(names, ", "), tname, kind, mode, how)
		}
		out = append(out, behavior.Finding{
			Type: behavior.LeftoverRules, Node: node, Service: chainService(left[i].c),
			Expected: "no chain", Observed: obs, Rules: texts, Message: msg,
		})
		i = j
	}
	return out
}

// checkedChains are the chains of t TextChecks looks at, in order: all of
// them; or, with a digest's facts, the orphans and the chains that can be
// leftovers, without making the others.
func checkedChains(rs *Ruleset, t *Table, orphans []int) []*Chain {
	if rs.facts == nil || t.dig == nil {
		return t.chains()
	}
	var out []*Chain
	for _, pos := range orphans {
		if pos < t.size() {
			out = append(out, t.dig.chain(pos))
		}
	}
	for _, names := range [][]string{userspaceChains, ipvsChains} {
		for _, name := range names {
			if c := t.Chain(name); c != nil && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b *Chain) int { return a.pos - b.pos })
	return out
}

// orphans are orphanChains, or the digest's.
func (rs *Ruleset) orphans() map[string][]int {
	if rs.Excerpt != "" {
		return nil
	}
	if rs.facts != nil {
		return rs.facts.orphans
	}
	return orphanChains(rs)
}

// orphanChains are, by table, the positions of the per-Service chains no
// rule of the table jumps to, in order.
func orphanChains(rs *Ruleset) map[string][]int {
	out := map[string][]int{}
	// Chains are visited in the order they were read, the order their
	// lines lie in memory.
	var rp reparser
	defer rp.flush()
	for _, tname := range rs.TableOrder {
		t := rs.Tables[tname]
		// referenced[c.pos]: a rule of the table jumps to c.
		referenced := make([]bool, t.size())
		for _, c := range t.chains() {
			c.targets(&rp, func(target string) {
				if target != "" && hasAnyPrefix(target, perServicePrefixes) {
					if c := t.Chain(target); c != nil {
						referenced[c.pos] = true
					}
				}
			})
		}
		for _, c := range t.chains() {
			if hasAnyPrefix(c.Name, perServicePrefixes) && !referenced[c.pos] {
				out[tname] = append(out[tname], c.pos)
			}
		}
	}
	return out
}

// SplitBrain reports KUBE chains present in both the legacy and the
// nf_tables backend: two sets of rules, of which the kernel runs both.
func SplitBrain(node string, legacy, nft *Ruleset) []behavior.Finding {
	if legacy == nil || nft == nil || !HasKubeChains(legacy) || !HasKubeChains(nft) {
		return nil
	}
	return []behavior.Finding{{
		Type: behavior.BackendSplitBrain, Node: node,
		Expected: "KUBE chains in one iptables backend",
		Observed: fmt.Sprintf("KUBE chains in both: legacy (%d rules) and nf_tables (%d rules)", countKube(legacy), countKube(nft)),
		Message:  "kube-proxy's chains exist in both iptables-legacy and iptables-nft, and the kernel runs both copies: the one kube-proxy no longer writes still acts",
	}}
}

// HasKubeChains reports whether the ruleset holds any KUBE- chain other
// than the kubelet's canary and firewall.
func HasKubeChains(rs *Ruleset) bool { return countKube(rs) > 0 }

func countKube(rs *Ruleset) int {
	if rs.facts != nil {
		return rs.facts.kube
	}
	n := 0
	for _, t := range rs.Tables {
		for _, c := range t.chains() {
			if name := c.Name; ProxyChain(name) && !kubeletChain(name) && name != "KUBE-PROXY-CANARY" {
				n += 1 + c.Len()
			}
		}
	}
	return n
}

func leftoverKind(chain, mode string) string {
	if mode == "userspace" {
		return ""
	}
	for _, c := range userspaceChains {
		if chain == c {
			return "userspace proxier (removed in Kubernetes 1.26)"
		}
	}
	if mode == "ipvs" {
		return ""
	}
	for _, c := range ipvsChains {
		if chain == c {
			return "IPVS mode"
		}
	}
	return ""
}

// modeFromChains is the mode of kube-proxy whose chains a dump holds,
// where the mode is not known otherwise: iptables with its per-Service
// chains (which no other mode writes), else ipvs with its chains, else
// userspace with the userspace proxier's; "" with none of them. A finding
// made on it says it was inferred.
func modeFromChains(rs *Ruleset) string {
	mode, _ := modeEvidence(rs)
	return mode
}

// modeEvidence is modeFromChains with what tells it: a chain of the
// mode's own, or (in an excerpt that lacks the chains) KUBE-SERVICES
// jumping to a Service's chain or matching ipvs mode's set.
func modeEvidence(rs *Ruleset) (mode, why string) {
	nat := rs.Tables["nat"]
	if nat == nil {
		return "", ""
	}
	has := func(names []string) string {
		if i := slices.IndexFunc(names, func(n string) bool { return nat.Chain(n) != nil }); i >= 0 {
			return names[i]
		}
		return ""
	}
	for _, c := range nat.chains() {
		if strings.HasPrefix(c.Name, PrefixSVC) || strings.HasPrefix(c.Name, PrefixSEP) {
			return "iptables", "nat has kube-proxy's Service or endpoint chains, KUBE-SVC-* or KUBE-SEP-*"
		}
	}
	if c := has(ipvsChains); c != "" {
		return "ipvs", "nat has " + c
	}
	if c := has(userspaceChains); c != "" {
		return "userspace", "nat has " + c
	}
	if svcs := nat.Chain("KUBE-SERVICES"); svcs != nil {
		for _, r := range svcs.Rules() {
			if serviceChain(r.Target) {
				return "iptables", "KUBE-SERVICES jumps to " + r.Target
			}
			if strings.Contains(r.Raw, "--match-set KUBE-CLUSTER-IP ") {
				return "ipvs", "KUBE-SERVICES matches ipvs mode's set KUBE-CLUSTER-IP"
			}
		}
	}
	return "", ""
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func chainService(c *Chain) string {
	for _, r := range c.Rules() {
		if spn, ok := SPNFromComment(r.Comment()); ok {
			return spn
		}
	}
	return ""
}

func chainRules(c *Chain) []string {
	var out []string
	for _, r := range c.Rules() {
		out = append(out, r.Raw)
	}
	sort.Strings(out)
	return wording.FirstN(out, 5)
}

// proxyFixedChains are the chains of fixed name kube-proxy (any mode of any
// release, the userspace proxier's included) and the kubelet write.
var proxyFixedChains = map[string]bool{
	"KUBE-SERVICES": true, "KUBE-EXTERNAL-SERVICES": true, "KUBE-NODEPORTS": true, "KUBE-POSTROUTING": true,
	"KUBE-MARK-MASQ": true, "KUBE-MARK-DROP": true, "KUBE-FORWARD": true, "KUBE-PROXY-FIREWALL": true,
	"KUBE-PROXY-CANARY": true, "KUBE-FIREWALL": true, "KUBE-KUBELET-CANARY": true, "KUBE-IPTABLES-HINT": true,
}

// ProxyChain tells the chains kube-proxy (and the kubelet) write in
// iptables from other components' chains that share their KUBE- prefix:
// kube-router's network policy chains (KUBE-ROUTER-INPUT, KUBE-NWPLCY-…,
// KUBE-POD-FW-…, KUBE-SRC-…, KUBE-DST-…, which k3s runs beside its
// kube-proxy) are neither leftovers of kube-proxy nor its to repair.
func ProxyChain(name string) bool {
	if proxyFixedChains[name] || slices.Contains(userspaceChains, name) || slices.Contains(ipvsChains, name) {
		return true
	}
	for _, p := range append(perServicePrefixes, PrefixXLB) {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// kubeletChain tells the KUBE- chains the kubelet, not kube-proxy, owns:
// every node has KUBE-IPTABLES-HINT (which iptables backend the node uses),
// KUBE-KUBELET-CANARY and KUBE-FIREWALL, whatever kube-proxy's mode, and
// older kubelets also made KUBE-MARK-DROP.
func kubeletChain(name string) bool {
	switch name {
	case "KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY", "KUBE-FIREWALL", "KUBE-MARK-DROP":
		return true
	}
	return false
}

// ModeLeftovers reports kube-proxy's iptables chains on a node whose
// kube-proxy runs in another mode: one finding per table whose chains act
// on packets. In nftables mode nothing in them belongs to the running
// proxy; in ipvs mode, all but the chains ipvs mode keeps. Chains that no
// packet enters (no built-in chain leads to them: the empty
// KUBE-PROXY-CANARY chains kube-proxy's iptables mode monitors, a
// KUBE-MARK-MASQ nothing jumps to) act on nothing: they are named in
// inert, one line per table, not reported. In an excerpt, which may leave
// out the jump to a chain, every chain counts as acting.
func ModeLeftovers(rs *Ruleset, node, backend, activeMode string) (out []behavior.Finding, inert []string) {
	for _, tname := range rs.TableOrder {
		t := rs.Tables[tname]
		var chains, idle []string
		rules, acting := 0, false
		var enters map[string]bool
		for _, c := range t.chains() {
			if activeMode == "ipvs" && slices.Contains(ipvsModeChains[tname], c.Name) {
				continue
			}
			if cname := c.Name; ProxyChain(cname) && !kubeletChain(cname) {
				chains = append(chains, cname)
				rules += c.Len()
				if enters == nil && rs.Excerpt == "" {
					enters = entered(t)
				}
				if enters == nil || enters[cname] {
					acting = true
				} else {
					idle = append(idle, cname)
				}
			}
		}
		if len(chains) == 0 {
			continue
		}
		if !acting {
			inert = append(inert, dataplane.InertLeftoverNote(backend, tname, idle))
			continue
		}
		out = append(out, behavior.Finding{
			Type: behavior.LeftoverRules, Node: node,
			Expected: "no kube-proxy chains in iptables",
			Observed: fmt.Sprintf("iptables (%s) table %s: %d KUBE chains with %d rules", backend, tname, len(chains), rules),
			Rules:    dataplane.ShortList(chains, 8),
			Message:  fmt.Sprintf("kube-proxy runs in %s mode, but iptables (%s backend) still holds its chains in table %s: leftovers of iptables mode, which still act on packets", activeMode, backend, tname),
		})
	}
	return out, inert
}

// entered are the chains of t a packet can enter: the built-in chains, and
// every chain a rule of an entered chain jumps or goes to.
func entered(t *Table) map[string]bool {
	seen := map[string]bool{}
	var todo []*Chain
	for _, c := range t.chains() {
		if c.Builtin || isBuiltinChain(c.Name) {
			seen[c.Name] = true
			todo = append(todo, c)
		}
	}
	for len(todo) > 0 {
		c := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, r := range c.Rules() {
			if next := t.Chain(r.Target); next != nil && !seen[next.Name] {
				seen[next.Name] = true
				todo = append(todo, next)
			}
		}
	}
	return seen
}

// dnatTarget is the endpoint a chain DNATs to ("" if none).
func dnatTarget(c *Chain) string {
	for _, r := range c.Rules() {
		if _, ep, ok := strings.Cut(r.Raw, "--to-destination "); ok {
			ep, _, _ = strings.Cut(ep, " ")
			return ep
		}
	}
	return ""
}
