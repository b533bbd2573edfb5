package iptables

import (
	"maps"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Change operations.
const (
	OpCreate  = "create"
	OpRewrite = "rewrite"
	OpDelete  = "delete"
	OpEdit    = "edit"
)

// Scope limits a plan to one Service's chains and rules.
type Scope struct {
	// Service is "namespace/name".
	Service string
}

// Diff is what takes the current layout to the target one: per table, in
// the order a payload writes them. Rules of the chains every Service
// shares compare as sets (kube-proxy does not keep their order), except
// the NodePort dispatch that must stay last in nat KUBE-SERVICES. With a
// scope, only that Service's chains and rules are compared.
func Diff(current, target *Layout, scope *Scope) []dataplane.Change {
	var out []dataplane.Change
	for _, name := range layoutTables {
		cur, tgt := current.Tables[name], target.Tables[name]
		in := scopeOf(name, cur, tgt, target, scope)
		for _, chain := range slices.Sorted(maps.Keys(tgt.Chains)) {
			if !in.chain(chain) {
				continue
			}
			want := tgt.Chains[chain]
			have, ok := cur.Chains[chain]
			svc := target.owner(chain)
			switch {
			case !ok:
				out = append(out, dataplane.Change{Table: name, Object: chain, Op: OpCreate, Service: svc, Add: want})
			case target.own.Shared[chain]:
				if c, ok := editShared(name, chain, have, want, in); ok {
					out = append(out, c)
				}
			case !sameRules(chain, have, want):
				out = append(out, dataplane.Change{Table: name, Object: chain, Op: OpRewrite, Service: svc, Add: want, Remove: have})
			}
		}
		for _, chain := range tgt.Kept {
			if _, ok := cur.Chains[chain]; !ok && scope == nil {
				out = append(out, dataplane.Change{Table: name, Object: chain, Op: OpCreate})
			}
		}
		for _, chain := range slices.Sorted(maps.Keys(cur.Chains)) {
			if _, ok := tgt.Chains[chain]; ok || !target.own.PerService || !isServiceChain(chain) || !in.chain(chain) {
				continue
			}
			out = append(out, dataplane.Change{Table: name, Object: chain, Op: OpDelete, Service: current.owner(chain), Remove: cur.Chains[chain]})
		}
		for _, chain := range []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"} {
			if scope != nil {
				continue
			}
			add, remove := setDiff(cur.Jumps[chain], tgt.Jumps[chain])
			if len(add)+len(remove) > 0 {
				out = append(out, dataplane.Change{Table: name, Object: chain, Op: OpEdit, Add: add, Remove: remove})
			}
		}
	}
	return out
}

// editShared compares a shared chain's rules as sets, keeping the NodePort
// dispatch last.
func editShared(table, chain string, have, want []string, in planScope) (dataplane.Change, bool) {
	isTail := func(x string) bool {
		return table == "nat" && chain == "KUBE-SERVICES" && strings.Contains(x, "kubernetes service nodeports;")
	}
	var haveBody, haveTail, wantBody, wantTail []string
	for _, x := range have {
		if isTail(x) {
			haveTail = append(haveTail, x)
		} else if in.rule(x) {
			haveBody = append(haveBody, x)
		}
	}
	for _, x := range want {
		if isTail(x) {
			wantTail = append(wantTail, x)
		} else if in.rule(x) {
			wantBody = append(wantBody, x)
		}
	}
	add, remove := setDiff(haveBody, wantBody)
	c := dataplane.Change{Table: table, Object: chain, Op: OpEdit, Add: add, Remove: remove}
	if in.service == "" {
		// The dispatch must be the chain's last rules, in order.
		n := len(haveTail)
		if !slices.Equal(haveTail, wantTail) || n > 0 && !slices.Equal(have[len(have)-n:], haveTail) {
			c.Remove = append(c.Remove, haveTail...)
			c.Add = append(c.Add, wantTail...)
		}
	}
	if len(c.Add)+len(c.Remove) == 0 {
		return c, false
	}
	c.Service = commonService(append(slices.Clone(c.Add), c.Remove...))
	return c, true
}

// sameRules compares a chain's rules in order. The comments of the rules
// that lead to and into endpoints are left out of the comparison:
// kube-proxy writes them or not depending on the cluster's size when it
// last wrote the chain (its large cluster mode), and over a thousand
// endpoints it rewrites only the Services that change, so both forms
// stand side by side on a healthy node.
func sameRules(chain string, have, want []string) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i] != want[i] && endpointRuleKey(chain, have[i]) != endpointRuleKey(chain, want[i]) {
			return false
		}
	}
	return true
}

// endpointRuleKey is a rule without the comment kube-proxy drops in its
// large cluster mode; other rules are themselves.
func endpointRuleKey(chain, x string) string {
	toEndpoint := strings.HasPrefix(chain, PrefixSEP) ||
		(strings.HasPrefix(chain, PrefixSVC) || strings.HasPrefix(chain, PrefixSVL)) && strings.HasPrefix(ruleTarget(x), PrefixSEP)
	if !toEndpoint {
		return x
	}
	i := strings.Index(x, " -m comment --comment ")
	if i < 0 {
		return x
	}
	rest := x[i+len(" -m comment --comment "):]
	if strings.HasPrefix(rest, `"`) {
		end := strings.Index(rest[1:], `"`)
		if end < 0 {
			return x
		}
		return x[:i] + rest[end+2:]
	}
	_, after, _ := strings.Cut(rest, " ")
	return x[:i] + " " + after
}

// setDiff compares two lists of rules as multisets: what want has more of
// (in want's order) and what have has more of (in have's order).
func setDiff(have, want []string) (add, remove []string) {
	count := map[string]int{}
	for _, x := range have {
		count[x]++
	}
	for _, x := range want {
		if count[x] > 0 {
			count[x]--
			continue
		}
		add = append(add, x)
	}
	for _, x := range have {
		if count[x] > 0 {
			count[x]--
			remove = append(remove, x)
		}
	}
	return add, remove
}

// commonService is the Service port every rule's comment names, or "".
func commonService(rules []string) string {
	svc := ""
	for _, x := range rules {
		s, ok := ruleService(x)
		if !ok || svc != "" && s != svc {
			return ""
		}
		svc = s
	}
	return svc
}

// ruleService is the Service port a rule's comment names.
func ruleService(x string) (string, bool) {
	i := strings.Index(x, "--comment ")
	if i < 0 {
		return "", false
	}
	c := x[i+len("--comment "):]
	if strings.HasPrefix(c, `"`) {
		end := strings.Index(c[1:], `"`)
		if end < 0 {
			return "", false
		}
		c = c[1 : end+1]
	} else {
		c, _, _ = strings.Cut(c, " ")
	}
	return SPNFromComment(c)
}
