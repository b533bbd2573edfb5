package nftables

import (
	"github.com/svctrace/svctrace/dataplane"
)

// xtablesTables are the tables iptables-nft writes: their rules are the
// iptables plane's, read from its dump.
var xtablesTables = map[string]bool{"filter": true, "nat": true, "mangle": true, "raw": true, "security": true}

// gateHooks are the hooks a Gate judges, after the destination
// translation of prerouting and output's nat chains.
var gateHooks = []string{"input", "forward", "output"}

// Gate implements dataplane.GateGiver: it judges packets by the filter base
// chains of the tables that are neither kube-proxy's nor iptables-nft's
// (firewalld's inet firewalld, a table written by hand), for the walk of an
// iptables-mode node; nil when there is none. Output's chains count from
// the nat priority on (-100), where the destination is translated.
func (p *Plane) Gate(env *dataplane.Env) dataplane.Gate {
	base := p.Walker(env).(*walker)
	hooks := map[string][]baseChain{}
	for _, h := range gateHooks {
		for _, bc := range p.hookChains(h) {
			t, c := bc.t, bc.c
			if t.Name == kubeProxyTable || t.Family != "inet" && xtablesTables[t.Name] || c.Type != "filter" || h == "output" && c.Prio <= -100 {
				continue
			}
			hooks[h] = append(hooks[h], bc)
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return &gate{w: &walker{p: p, env: base.env, hooks: hooks, dynamic: base.dynamic}}
}

type gate struct{ w *walker }

// Judge implements dataplane.Gate.
func (g *gate) Judge(hook dataplane.Hook, orig, cur dataplane.Packet, dnatted bool) (dataplane.Branch, bool) {
	list := g.w.hooks[string(hook)]
	if len(list) == 0 {
		return dataplane.Branch{}, false
	}
	k := &walk{w: g.w}
	s := &state{pkt: cur, orig: orig, prob: 1, hook: string(hook), dnatted: dnatted}
	k.chains(s, string(hook), list, nil)
	for _, b := range k.out {
		if b.Verdict == dataplane.Drop || b.Verdict == dataplane.Reject {
			return b, true
		}
	}
	return dataplane.Branch{}, false
}
