package nftables

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// Checks looks for what behaviour cannot show: kube-proxy's per-service
// chains and affinity sets nothing refers to (it failed to delete them),
// and KUBE-* chains of iptables-nft (another proxy mode's leftovers) next
// to kube-proxy's table. mode is kube-proxy's configured mode ("" when
// unknown); in iptables or ipvs mode kube-proxy's nftables table is the
// leftover. The tables of iptables-nft are left to the iptables plane
// where the node's state holds their iptables-save dump: one finding for
// one kernel table.
func (p *Plane) Checks(node, mode string) []behavior.Finding {
	var out []behavior.Finding
	switch mode {
	case "iptables", "ipvs":
		if p.kp != nil {
			out = append(out, behavior.Finding{
				Type: behavior.LeftoverRules, Node: node,
				Expected: "no nftables table of kube-proxy",
				Observed: fmt.Sprintf("table %s with %d chains", p.kp.ID(), len(p.kp.Chains)),
				Rules:    chainNames(p.kp.Chains),
				Message:  fmt.Sprintf("table %s belongs to kube-proxy's nftables mode; it is a leftover on a node whose kube-proxy runs in %s mode", p.kp.ID(), mode),
			})
		}
		return out
	}
	if p.kp != nil {
		out = append(out, orphans(p.kp, node)...)
	}
	if p.kp == nil && mode == "" {
		return out
	}
	for _, t := range p.tables {
		if t == p.kp || t.Family != p.fam || p.iptablesNFT {
			continue
		}
		kube, acting := leftoverChains(t)
		if !acting {
			// Nothing leads to them: see Notes.
			continue
		}
		n := 0
		var rules []string
		for _, c := range kube {
			n += len(c.rules())
			for _, r := range c.rules() {
				rules = append(rules, c.Name+": "+r.Text())
			}
		}
		out = append(out, behavior.Finding{
			Type: behavior.LeftoverRules, Node: node,
			Expected: "no KUBE-* chains outside kube-proxy's table",
			Observed: fmt.Sprintf("table %s holds %d KUBE-* chains with %d rules: %s", t.ID(), len(kube), n, strings.Join(chainNames(kube), ", ")),
			Rules:    wording.FirstN(rules, 5),
			Message: fmt.Sprintf("table %s holds chains of kube-proxy's iptables or ipvs mode (written through iptables-nft); they are leftovers on a node whose kube-proxy runs in nftables mode, and packets still traverse them",
				t.ID()),
		})
	}
	return out
}

// leftoverChains are the chains of kube-proxy's iptables mode in a table
// of iptables-nft (not another component's KUBE- chains: see
// iptables.ProxyChain), and whether a packet enters any of them (a base
// chain leads to it).
func leftoverChains(t *Table) (kube []*Chain, acting bool) {
	var entered map[string]bool
	for _, c := range t.Chains {
		if iptables.ProxyChain(c.Name) && !kubeletChain(c.Name) {
			kube = append(kube, c)
			if entered == nil {
				entered = t.entered()
			}
			acting = acting || entered[c.Name]
		}
	}
	return kube, acting
}

// entered are the chains of t a packet can enter: its base chains, and
// every chain a rule of an entered chain jumps or goes to.
func (t *Table) entered() map[string]bool {
	seen := map[string]bool{}
	var todo []*Chain
	for _, c := range t.Chains {
		if c.Base() {
			seen[c.Name] = true
			todo = append(todo, c)
		}
	}
	for len(todo) > 0 {
		c := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		targets, sets := map[string]bool{}, map[string]bool{}
		for _, r := range c.rules() {
			for _, st := range r.Stmts {
				refs(st, targets, sets)
			}
		}
		for name := range targets {
			if next := t.Chain(name); next != nil && !seen[name] {
				seen[name] = true
				todo = append(todo, next)
			}
		}
	}
	return seen
}

// inertLeftovers are the notes on the tables of iptables-nft beside
// kube-proxy's whose KUBE-* chains no packet enters: they act on nothing.
func (p *Plane) inertLeftovers() []string {
	if p.kp == nil {
		return nil
	}
	var out []string
	for _, t := range p.tables {
		if t == p.kp || t.Family != p.fam || p.iptablesNFT {
			continue
		}
		if kube, acting := leftoverChains(t); len(kube) > 0 && !acting {
			out = append(out, dataplane.InertLeftoverNote("nf_tables", t.Name, chainNames(kube)))
		}
	}
	return out
}

// kubeletChain: chains the kubelet itself keeps in iptables in every
// proxy mode.
func kubeletChain(name string) bool {
	switch name {
	case "KUBE-KUBELET-CANARY", "KUBE-FIREWALL", "KUBE-IPTABLES-HINT":
		return true
	}
	return false
}

// orphans lists per-service chains no rule or map element jumps or goes
// to, and affinity sets no rule reads or writes.
func orphans(t *Table, node string) []behavior.Finding {
	chains, sets := map[string]bool{}, map[string]bool{}
	for _, s := range t.Sets {
		for _, el := range s.Elements {
			refs(el.Data, chains, sets)
		}
	}
	for _, c := range t.chainsMaybe(markTarget | markSetRef | markElem) {
		for _, r := range c.rules() {
			for _, st := range r.Stmts {
				refs(st, chains, sets)
			}
		}
	}
	var out []behavior.Finding
	for _, c := range t.Chains {
		p := perServicePrefix(c.Name)
		if p == "" || p == prefixAffinity || chains[c.Name] || c.Base() {
			continue
		}
		if c.ruleCount() == 0 {
			// kube-proxy flushes a stale chain at once and deletes it at
			// a later sync (the kernel may still hold a reference): an
			// empty unreachable chain is its normal state in between.
			continue
		}
		spn, _, _ := SPNFromName(c.Name)
		var rules []string
		for _, r := range c.rules() {
			rules = append(rules, r.Text())
		}
		out = append(out, behavior.Finding{
			Type: behavior.OrphanChain, Node: node, Service: spn,
			Expected: "no chain",
			Observed: fmt.Sprintf("%s chain %s with %d rules, unreachable", t.ID(), c.Name, len(rules)),
			Rules:    wording.FirstN(rules, 5),
			Endpoint: dnatTarget(rules),
			Message: fmt.Sprintf("chain %s in %s is not the target of any rule or map element: kube-proxy did not clean it up "+
				"(it flushes a stale chain and deletes it a second later, so only a lasting one is a problem)", c.Name, t.ID()),
		})
	}
	for _, s := range t.Sets {
		if !strings.HasPrefix(s.Name, prefixAffinity) || sets[s.Name] {
			continue
		}
		spn, _, _ := SPNFromName(s.Name)
		out = append(out, behavior.Finding{
			Type: behavior.OrphanChain, Node: node, Service: spn,
			Expected: "no set",
			Observed: fmt.Sprintf("%s affinity set %s with %d elements, unused", t.ID(), s.Name, len(s.Elements)),
			Message:  fmt.Sprintf("affinity set %s in %s is neither read nor written by any rule: kube-proxy did not clean it up", s.Name, t.ID()),
		})
	}
	return out
}

// refs collects the chains an expression or statement jumps or goes to,
// and the sets it names.
func refs(e any, chains, sets map[string]bool) {
	switch x := e.(type) {
	case *Verdict:
		if x.Target != "" {
			chains[x.Target] = true
		}
	case *SetRef:
		sets[x.Name] = true
	case *SetStmt:
		sets[x.Set] = true
		refs(x.Elem, chains, sets)
		refs(x.Data, chains, sets)
	case *AnonSet:
		for _, el := range x.Elems {
			refs(el.Key, chains, sets)
			refs(el.Data, chains, sets)
		}
	case *Match:
		refs(x.Left, chains, sets)
		refs(x.Right, chains, sets)
	case *VMap:
		refs(x.Key, chains, sets)
		refs(x.Data, chains, sets)
	case *MapLookup:
		refs(x.Key, chains, sets)
		refs(x.Data, chains, sets)
	case *Mangle:
		refs(x.Value, chains, sets)
	case *NAT:
		refs(x.Addr, chains, sets)
		refs(x.Port, chains, sets)
	case *Concat:
		for _, p := range x.Parts {
			refs(p, chains, sets)
		}
	case *Binop:
		refs(x.Left, chains, sets)
		refs(x.Right, chains, sets)
	}
}

func chainNames(cs []*Chain) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// dnatTarget is the endpoint a chain's rules DNAT to ("" if none): an
// endpoint chain's "dnat ip to 10.244.1.10:8080".
func dnatTarget(rules []string) string {
	for _, r := range rules {
		for _, dnat := range []string{"dnat to ", "dnat ip to ", "dnat ip6 to "} {
			if _, ep, ok := strings.Cut(r, dnat); ok {
				ep, _, _ = strings.Cut(ep, " ")
				// A service chain's DNAT picks its address from a map
				// ("numgen random mod 3 map {...}"): no one endpoint.
				if _, err := netip.ParseAddrPort(ep); err != nil {
					if _, err := netip.ParseAddr(ep); err != nil {
						return ""
					}
				}
				return ep
			}
		}
	}
	return ""
}
