package iptables

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// maxRestoreLine is the longest payload line written: iptables-restore
// reads a line into a fixed buffer, and splits a longer one in two.
const maxRestoreLine = 4096

// payloadOp is one operation of a restore payload: a chain declared
// (which flushes it), removed, or a rule added or deleted.
type payloadOp struct {
	table, verb, chain string
	// rule is an added or deleted rule in save form ("-A CHAIN ...").
	rule string
}

func (o payloadOp) String() string {
	if o.rule != "" {
		return fmt.Sprintf("%s: %s %q", o.table, o.verb, o.rule)
	}
	return fmt.Sprintf("%s: %s chain %s", o.table, o.verb, o.chain)
}

// CheckPayload reads a restore payload back, with the plane's own parser,
// before it is written, and refuses one that does anything but the changes
// it was made from, or anything outside the part of the tables the
// target's mode owns: a table other than filter, nat or mangle, a chain
// that is not kube-proxy's declared, flushed or deleted, a rule added to
// a built-in chain that is not one of kube-proxy's jumps (with exact,
// the very jumps kube-proxy's iptables mode writes), a rule of
// kube-proxy's that jumps to a chain of another component, or a line the
// parser reads otherwise than it was rendered.
func CheckPayload(target *Layout, changes []dataplane.Change, payload string, exact bool) error {
	own := target.own
	if own == nil {
		own = iptablesMode
	}
	want, err := changeOps(changes)
	if err != nil {
		return fmt.Errorf("the restore payload: %w: refusing to write it", err)
	}
	got, err := payloadOps(payload)
	if err != nil {
		return fmt.Errorf("the restore payload: %w: refusing to write it", err)
	}
	var jumps map[string]map[string][]string
	if exact && own == iptablesMode {
		jumps = kubeProxyJumps(target.Family)
	}
	for _, op := range got {
		if err := own.allows(op, jumps); err != nil {
			return fmt.Errorf("the restore payload: %s: %w: refusing to write it", op, err)
		}
	}
	if err := parseBack(target.Family, own, got); err != nil {
		return fmt.Errorf("the restore payload does not read back as rendered: %w: refusing to write it", err)
	}
	if extra, missing := opsDiff(want, got); extra != "" || missing != "" {
		return fmt.Errorf("the restore payload does not read back as the changes it was made from (it holds %s, and lacks %s): refusing to write it", orNothing(extra), orNothing(missing))
	}
	return nil
}

// changeOps are the operations the changes stand for.
func changeOps(changes []dataplane.Change) ([]payloadOp, error) {
	var out []payloadOp
	rules := func(c dataplane.Change, verb string, rs []string) error {
		for _, x := range rs {
			if !strings.HasPrefix(x, "-A "+c.Object+" ") || strings.ContainsAny(x, "\r\n\x00") {
				return fmt.Errorf("%s %s: rendered rule %q is not one rule of that chain", c.Table, c.Object, x)
			}
			out = append(out, payloadOp{table: c.Table, verb: verb, chain: c.Object, rule: x})
		}
		return nil
	}
	for _, c := range changes {
		var err error
		switch c.Op {
		case OpEdit:
			if err = rules(c, "delete", c.Remove); err == nil {
				err = rules(c, "add", c.Add)
			}
		case OpDelete:
			out = append(out, payloadOp{table: c.Table, verb: "declare", chain: c.Object}, payloadOp{table: c.Table, verb: "remove", chain: c.Object})
		default:
			out = append(out, payloadOp{table: c.Table, verb: "declare", chain: c.Object})
			err = rules(c, "add", c.Add)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// payloadOps reads the lines of a payload: each a table header, a chain
// declaration, an -A, -I CHAIN 1, -D or -X line, or COMMIT, and nothing
// else (no comment, no blank line, no policy, no other command).
func payloadOps(payload string) ([]payloadOp, error) {
	var out []payloadOp
	table := ""
	for n, line := range strings.Split(strings.TrimSuffix(payload, "\n"), "\n") {
		if payload == "" {
			break
		}
		at := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		if len(line) > maxRestoreLine {
			return nil, at("longer than the %d bytes iptables-restore reads as one line", maxRestoreLine)
		}
		if strings.IndexFunc(line, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			return nil, at("holds a control character")
		}
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "*") && table == "":
			table = line[1:]
			if !slices.Contains(layoutTables, table) {
				return nil, at("table %s is none of kube-proxy's (%s)", table, strings.Join(layoutTables, ", "))
			}
		case line == "COMMIT" && table != "":
			table = ""
		case table == "":
			return nil, at("outside a table")
		case strings.HasPrefix(line, ":") && len(f) == 3 && f[1] == "-" && f[2] == "[0:0]":
			out = append(out, payloadOp{table: table, verb: "declare", chain: f[0][1:]})
		case len(f) == 2 && f[0] == "-X":
			out = append(out, payloadOp{table: table, verb: "remove", chain: f[1]})
		case len(f) > 2 && f[0] == "-A":
			out = append(out, payloadOp{table: table, verb: "add", chain: f[1], rule: line})
		case len(f) > 2 && f[0] == "-D":
			out = append(out, payloadOp{table: table, verb: "delete", chain: f[1], rule: "-A" + line[2:]})
		case len(f) > 3 && f[0] == "-I" && f[2] == "1":
			rest := strings.TrimPrefix(line, "-I "+f[1]+" 1")
			out = append(out, payloadOp{table: table, verb: "add", chain: f[1], rule: "-A " + f[1] + rest})
		default:
			return nil, at("not a line a repair writes")
		}
	}
	if table != "" {
		return nil, fmt.Errorf("table %s has no COMMIT", table)
	}
	return out, nil
}

// allows says why the mode may not make an operation (nil when it may).
// jumps, when set, are the only rules it may add to a built-in chain.
func (o *Ownership) allows(op payloadOp, jumps map[string]map[string][]string) error {
	if !builtinChains[op.chain] {
		if !o.owns(op.table, op.chain) {
			return fmt.Errorf("chain %s is not kube-proxy's", op.chain)
		}
		return nil
	}
	switch {
	case op.rule == "":
		return fmt.Errorf("built-in chain %s is not kube-proxy's to declare or remove", op.chain)
	case !o.ownsJump(op.table, op.rule):
		return fmt.Errorf("the rule in built-in chain %s is not a jump to a chain of kube-proxy's", op.chain)
	case op.verb == "add" && jumps != nil && !slices.Contains(jumps[op.table][op.chain], op.rule):
		return fmt.Errorf("the rule in built-in chain %s is not one of the jumps kube-proxy writes", op.chain)
	}
	return nil
}

// kubeProxyJumps are the jumps kube-proxy's iptables mode writes in the
// built-in chains, by table and chain, whatever it renders beside them.
func kubeProxyJumps(family string) map[string]map[string][]string {
	l := NewLayout(family, nil)
	r := &renderer{s: RenderSettings{Family: family}, filter: l.Tables["filter"], nat: l.Tables["nat"]}
	r.jumps()
	out := map[string]map[string][]string{}
	for name, t := range l.Tables {
		out[name] = t.Jumps
	}
	return out
}

// orNothing is a list of operations for a message.
func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// opsDiff compares two lists of operations as multisets: the first of
// what got has more of, and of what want has more of.
func opsDiff(want, got []payloadOp) (extra, missing string) {
	count := map[payloadOp]int{}
	for _, op := range want {
		count[op]++
	}
	for _, op := range got {
		count[op]--
	}
	for _, op := range slices.SortedFunc(maps.Keys(count), func(a, b payloadOp) int { return strings.Compare(a.String(), b.String()) }) {
		switch {
		case count[op] < 0 && extra == "":
			extra = op.String()
		case count[op] > 0 && missing == "":
			missing = op.String()
		}
	}
	return extra, missing
}

// parseBack reads the payload's rules with the plane's parser, as a dump
// of their tables, and holds each to its line: one rule, in the chain the
// line names, whose target is the one the repair's own reading of the
// line sees. A jump to a chain kube-proxy does not own is an error there:
// the dump defines no such chain.
func parseBack(family string, own *Ownership, ops []payloadOp) error {
	var b strings.Builder
	for _, table := range layoutTables {
		declared := map[string]bool{}
		var lines []string
		for _, op := range ops {
			if op.table != table || op.rule == "" {
				continue
			}
			for _, c := range []string{op.chain, ruleTarget(op.rule)} {
				if !builtinChains[c] && !declared[c] && own.owns(table, c) {
					declared[c] = true
				}
			}
			lines = append(lines, op.rule)
		}
		if len(lines) == 0 {
			continue
		}
		b.WriteString("*" + table + "\n")
		for _, c := range slices.Sorted(maps.Keys(declared)) {
			b.WriteString(":" + c + " - [0:0]\n")
		}
		b.WriteString(strings.Join(lines, "\n") + "\nCOMMIT\n")
	}
	rs, err := ParseString("the restore payload", b.String(), ParseOptions{Family: family})
	if err != nil {
		return err
	}
	next := map[[2]string]int{}
	for _, op := range ops {
		if op.rule == "" {
			continue
		}
		key := [2]string{op.table, op.chain}
		c := rs.Chain(op.table, op.chain)
		if c == nil || next[key] >= c.Len() {
			return fmt.Errorf("%s: %q reads as no rule of chain %s", op.table, op.rule, op.chain)
		}
		r := c.Rules()[next[key]]
		next[key]++
		if r.Raw != op.rule || r.Target != ruleTarget(op.rule) {
			return fmt.Errorf("%s: %q reads as a rule with target %q", op.table, op.rule, r.Target)
		}
	}
	for _, table := range rs.Tables {
		for name, c := range table.Chains {
			if c.Len() != next[[2]string{table.Name, name}] {
				return fmt.Errorf("%s: chain %s reads as %d rules, %d were rendered", table.Name, name, c.Len(), next[[2]string{table.Name, name}])
			}
		}
	}
	return nil
}
