package nftables

import (
	"sort"
	"sync"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// kubeProxyTable is the name of kube-proxy's table in each family.
const kubeProxyTable = "kube-proxy"

// Plane is one family of a parsed nftables state: the tables a packet of
// that family traverses (ip or ip6, and inet).
type Plane struct {
	rs *Ruleset
	// family is "IPv4" or "IPv6"; fam the nftables family ("ip", "ip6").
	family, fam string
	tables      []*Table
	kp          *Table
	// hooks, dynamic and frontends are made on first use and kept: a
	// recheck walks one Service again on a state read once.
	hooks         map[string][]baseChain
	dynamic       map[setRef]bool
	walkOnce      sync.Once
	frontends     []behavior.Frontend
	frontendNotes []string
	frontendsOnce sync.Once
	// deferred holds the undecoded parts of a narrow read (LoadNarrow);
	// nil for a state read in full.
	deferred *lazyDoc
	// iptablesNFT: the node's state holds an iptables-save dump of the
	// nf_tables backend for this family, which reads the tables
	// iptables-nft writes as iptables rules; the iptables plane reports
	// their leftovers, so this plane does not report them again.
	iptablesNFT bool
}

var _ dataplane.Plane = (*Plane)(nil)

// NewPlane selects the tables of one IP family ("IPv4" or "IPv6"): the ip
// (ip6) tables, with kube-proxy's "ip kube-proxy" ("ip6 kube-proxy"), and
// the inet tables other components may have, which see both families.
func NewPlane(rs *Ruleset, family string) *Plane {
	p := &Plane{rs: rs, family: family, fam: "ip"}
	if family == "IPv6" {
		p.fam = "ip6"
	}
	if rs == nil {
		p.rs = &Ruleset{}
		return p
	}
	for _, t := range rs.Tables {
		if t.Family != p.fam && t.Family != "inet" {
			continue
		}
		p.tables = append(p.tables, t)
		if t.Family == p.fam && t.Name == kubeProxyTable {
			p.kp = t
		}
	}
	return p
}

// Mode is "nftables".
func (p *Plane) Mode() string { return "nftables" }

// HasKubeProxy reports whether kube-proxy's table exists in this family.
func (p *Plane) HasKubeProxy() bool { return p.kp != nil }

// Table returns kube-proxy's table of this family, nil without one.
func (p *Plane) Table() *Table { return p.kp }

// Notes are the parser's notes for this family's tables and the input as
// a whole, and what reading kube-proxy's maps could not settle.
func (p *Plane) Notes() []string {
	var out []string
	for _, n := range p.deferred.withNotes(p.rs.Notes) {
		if n.Family == "" || n.Family == p.fam || n.Family == "inet" {
			out = append(out, n.Text)
		}
	}
	p.frontendsOnce.Do(func() { p.frontends, p.frontendNotes = p.discover() })
	return append(append(out, p.frontendNotes...), p.inertLeftovers()...)
}

// baseChain is a base chain with its table.
type baseChain struct {
	t *Table
	c *Chain
}

// hookChains lists the base chains of a hook in the order the kernel runs
// them: by priority, ties in input order.
func (p *Plane) hookChains(hook string) []baseChain {
	var out []baseChain
	for _, t := range p.tables {
		for _, c := range t.Chains {
			if c.Hook == hook {
				out = append(out, baseChain{t, c})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].c.Prio < out[j].c.Prio })
	return out
}

// Walker walks packets of this family through the state.
func (p *Plane) Walker(env *dataplane.Env) dataplane.Walker {
	if env == nil {
		env = &dataplane.Env{}
	}
	p.walkOnce.Do(func() {
		p.hooks, p.dynamic = map[string][]baseChain{}, map[setRef]bool{}
		for _, h := range []string{"prerouting", "input", "forward", "output", "postrouting"} {
			p.hooks[h] = p.hookChains(h)
		}
		for _, t := range p.tables {
			for _, c := range t.chainsMaybe(markElem) {
				for _, r := range c.rules() {
					for _, s := range r.Stmts {
						if ss, ok := s.(*SetStmt); ok && ss.Op != "delete" {
							p.dynamic[setRef{t, ss.Set}] = true
						}
					}
				}
			}
		}
	})
	return &walker{p: p, env: env, hooks: p.hooks, dynamic: p.dynamic}
}
