package nftables

import (
	"fmt"
	"slices"
	"strconv"
)

// allowed says why a repair may not run a command (nil when it may): only
// adding, flushing and deleting in kube-proxy's table of the family, and
// of objects in the forms a repair writes them.
func allowed(c nftCommand, family string) error {
	if len(c) < 4 {
		return fmt.Errorf("not a command a repair writes")
	}
	for _, t := range c[:4] {
		if t.quoted {
			return fmt.Errorf("not a command a repair writes")
		}
	}
	verb, kind, fam, table := c[0].text, c[1].text, c[2].text, c[3].text
	if !slices.Contains([]string{"add", "delete", "flush"}, verb) || !slices.Contains([]string{"table", "chain", "rule", "set", "map", "element"}, kind) {
		return fmt.Errorf("%s %s is not a command a repair writes", verb, kind)
	}
	if fam != family || table != KubeProxyTable {
		return fmt.Errorf("table %s %s is not kube-proxy's table of the family (%s %s)", fam, table, family, KubeProxyTable)
	}
	if len(c) < 5 || c[4].quoted {
		return fmt.Errorf("not a command a repair writes")
	}
	body := c[4:]
	switch verb + " " + kind {
	case "add table":
		if len(c) != 9 || c[4].text != "{" || c[5].text != "comment" || !c[6].quoted || c[7].text != ";" || c[8].text != "}" {
			return fmt.Errorf("kube-proxy's table is declared with its comment only")
		}
		return nil
	case "delete chain", "flush chain", "delete set", "delete map":
		if len(body) != 1 {
			return fmt.Errorf("%s %s names one object only", verb, kind)
		}
		return nil
	case "add chain":
		return chainBody(body)
	case "add rule":
		return ruleBody(body)
	case "add set", "add map", "add element", "delete element":
		if len(body) < 3 || body[1].text != "{" || body[len(body)-1].text != "}" {
			return fmt.Errorf("%s %s is NAME { ... }", verb, kind)
		}
		return nil
	}
	return fmt.Errorf("%s %s is not a command a repair writes", verb, kind)
}

// chainBody checks a chain's declaration: a regular chain, or one of
// kube-proxy's base chains on its own hook, type and priority; a comment.
func chainBody(body nftCommand) error {
	name := body[0].text
	opts := body[1:]
	if len(opts) == 0 {
		return nil
	}
	if opts[0].text != "{" || opts[len(opts)-1].text != "}" {
		return fmt.Errorf("chain %s: its declaration is { ... }", name)
	}
	opts = opts[1 : len(opts)-1]
	for len(opts) > 0 {
		switch {
		case len(opts) >= 7 && opts[0].text == "type" && opts[2].text == "hook" && opts[4].text == "priority" && opts[6].text == ";":
			prio, err := strconv.Atoi(opts[5].text)
			want := hookChain{name: name, typ: opts[1].text, hook: opts[3].text, prio: prio}
			if err != nil || !slices.Contains(baseChains(false), want) && !slices.Contains(baseChains(true), want) {
				return fmt.Errorf("chain %s on hook %s (type %s, priority %s) is none of kube-proxy's base chains", name, opts[3].text, opts[1].text, opts[5].text)
			}
			opts = opts[7:]
		case len(opts) >= 3 && opts[0].text == "comment" && opts[1].quoted && opts[2].text == ";":
			opts = opts[3:]
		default:
			return fmt.Errorf("chain %s: %q is not in a declaration a repair writes", name, opts.String())
		}
	}
	return nil
}

// ruleBody checks a rule: in a base chain, one of kube-proxy's jumps;
// elsewhere, a rule in one line of kube-proxy's table (nft jumps to no
// other table's chain).
func ruleBody(body nftCommand) error {
	chain := body[0].text
	isBase := false
	for _, bc := range append(baseChains(false), baseChains(true)...) {
		isBase = isBase || bc.name == chain
	}
	if !isBase {
		return nil
	}
	rule := body[1:].String()
	for _, j := range append(jumpChains(false), jumpChains(true)...) {
		if j.from == chain && (rule == "jump "+j.to || rule == j.match+" jump "+j.to) {
			return nil
		}
	}
	return fmt.Errorf("base chain %s: %q is not one of kube-proxy's jumps", chain, rule)
}
