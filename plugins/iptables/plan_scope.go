package iptables

import (
	"github.com/svctrace/svctrace/model"
)

// planScope says which chains and rules a plan compares.
type planScope struct {
	// service is "namespace/name", "" for every Service.
	service string
	// owned are the per-Service chains of that Service, in either layout.
	owned map[string]bool
}

func scopeOf(table string, cur, tgt *LayoutTable, target *Layout, scope *Scope) planScope {
	if scope == nil {
		return planScope{}
	}
	s := planScope{service: scope.Service, owned: map[string]bool{}}
	for _, t := range []*LayoutTable{cur, tgt} {
		for chain := range t.Chains {
			if isServiceChain(chain) && serviceOf(t.owners[chain]) == s.service {
				s.owned[chain] = true
			}
		}
	}
	return s
}

// chain reports whether the plan compares the chain: every chain without
// a scope; with one, the Service's own chains and the shared chains (for
// its rules in them).
func (s planScope) chain(name string) bool {
	return s.service == "" || s.owned[name] || dispatchChains[name]
}

// rule reports whether the plan compares a rule of a shared chain.
func (s planScope) rule(x string) bool {
	if s.service == "" {
		return true
	}
	spn, ok := ruleService(x)
	return ok && serviceOf(spn) == s.service
}

// serviceOf is the "namespace/name" of a Service port name.
func serviceOf(spn string) string {
	svc := model.ParseServicePortName(spn).Service()
	return svc
}

// owner is the Service port a per-Service chain belongs to, "" if unknown.
func (l *Layout) owner(chain string) string {
	return l.Tables["nat"].owners[chain]
}

// findOwners names the Service port of each per-Service chain: from the
// comments of its rules, else from the chain that jumps to it (a large
// cluster's rules have no comments below KUBE-SERVICES).
func (t *LayoutTable) findOwners() {
	t.owners = map[string]string{}
	for chain, rules := range t.Chains {
		if !isServiceChain(chain) {
			continue
		}
		for _, x := range rules {
			if spn, ok := ruleService(x); ok {
				t.owners[chain] = spn
				break
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for chain, rules := range t.Chains {
			for _, x := range rules {
				to := ruleTarget(x)
				if !isServiceChain(to) || t.owners[to] != "" {
					continue
				}
				spn, ok := ruleService(x)
				if !ok {
					spn = t.owners[chain]
				}
				if spn != "" {
					t.owners[to] = spn
					changed = true
				}
			}
		}
	}
}
