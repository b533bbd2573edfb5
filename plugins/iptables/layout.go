package iptables

import (
	"bufio"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Layout is kube-proxy's part of one IP family's iptables state: in each
// table, the chains kube-proxy owns with their rules, and kube-proxy's
// jump rules in the built-in chains. Rules are in the form iptables-save
// prints them. Nothing else of a table belongs to a Layout: a repair reads
// and writes only this.
type Layout struct {
	Family string
	Tables map[string]*LayoutTable
	// own says which chains are kube-proxy's: iptables mode's, or those
	// of another mode that keeps iptables rules beside its own objects.
	own *Ownership
}

// LayoutTable is kube-proxy's part of one table.
type LayoutTable struct {
	// Chains are kube-proxy's chains, each with its rules in order.
	Chains map[string][]string
	// Jumps are kube-proxy's rules in the built-in chains (PREROUTING,
	// INPUT, ...), by chain, in order.
	Jumps map[string][]string
	// Kept are chains kube-proxy makes sure exist, and jumps to, but whose
	// rules it leaves to another component (kubelet's KUBE-FIREWALL where
	// kube-proxy writes no copy of it): they are not in Chains.
	Kept []string
	// owners are the Service ports of the per-Service chains.
	owners map[string]string
}

// layoutTables are the tables a layout covers, in the order a payload
// writes them (kube-proxy writes filter, then nat).
var layoutTables = []string{"filter", "nat", "mangle"}

// fixedChains are kube-proxy's chains that are not per Service, by table.
var fixedChains = map[string][]string{
	"filter": {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL", "KUBE-FIREWALL", "KUBE-PROXY-CANARY"},
	"nat":    {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"},
	"mangle": {"KUBE-PROXY-CANARY"},
}

// dispatchChains are the chains every Service writes rules into, in an
// order kube-proxy does not keep (it follows a map's): their rules compare
// as a set, except the last rule of nat KUBE-SERVICES, which must stay
// last.
var dispatchChains = map[string]bool{"KUBE-SERVICES": true, "KUBE-EXTERNAL-SERVICES": true, "KUBE-NODEPORTS": true, "KUBE-PROXY-FIREWALL": true}

// Ownership is which chains of a family's tables a kube-proxy mode owns,
// and how their rules compare.
type Ownership struct {
	// Chains are the mode's chains by table, beside the per-Service ones.
	Chains map[string][]string
	// PerService: the mode makes nat chains per Service and endpoint
	// (KUBE-SVC-…, KUBE-SEP-…), which a repair creates and deletes.
	PerService bool
	// Shared are the chains whose rules kube-proxy writes in an order it
	// does not keep: they compare as sets.
	Shared map[string]bool
}

// iptablesMode is what kube-proxy's iptables mode owns.
var iptablesMode = &Ownership{Chains: fixedChains, PerService: true, Shared: dispatchChains}

// owns reports whether the mode owns the chain.
func (o *Ownership) owns(table, chain string) bool {
	if slices.Contains(o.Chains[table], chain) {
		return true
	}
	return o.PerService && table == "nat" && isServiceChain(chain)
}

// isServiceChain reports whether a chain name is one of kube-proxy's
// per-Service chains.
func isServiceChain(chain string) bool {
	for _, p := range []string{PrefixSVC, PrefixSVL, PrefixEXT, PrefixFW, PrefixSEP} {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

var builtinChains = map[string]bool{"PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}

// ownsJump reports whether a rule of a built-in chain is one of
// kube-proxy's jumps: one whose target is a chain kube-proxy owns.
func (o *Ownership) ownsJump(table, line string) bool {
	t := ruleTarget(line)
	return t != "" && o.owns(table, t)
}

// ruleTarget is the -j or -g target of a rule line in save form.
func ruleTarget(line string) string {
	i := strings.LastIndex(line, " -j ")
	if j := strings.LastIndex(line, " -g "); j > i {
		i = j
	}
	if i < 0 {
		return ""
	}
	t, _, _ := strings.Cut(line[i+4:], " ")
	return t
}

// ReadLayout takes kube-proxy's part out of an iptables-save dump of one
// family. A line it cannot place (a rule before any table, a rule of an
// undeclared chain) is an error naming the line.
func ReadLayout(family, text string) (*Layout, error) {
	return ReadOwnedLayout(family, text, nil)
}

// ReadOwnedLayout takes out of a dump the part a mode owns (nil:
// iptables mode).
func ReadOwnedLayout(family, text string, own *Ownership) (*Layout, error) {
	l := NewLayout(family, own)
	own = l.own
	var table string
	declared := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \r")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "*"):
			table = line[1:]
			clear(declared)
		case line == "COMMIT":
			table = ""
		case table == "":
			return nil, fmt.Errorf("line %d: %q is outside any table", n, line)
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			declared[name] = true
			if t := l.Tables[table]; t != nil && own.owns(table, name) {
				t.Chains[name] = t.Chains[name][:0:0]
			}
		case strings.HasPrefix(line, "-A "):
			chain, _, _ := strings.Cut(line[3:], " ")
			if !declared[chain] {
				return nil, fmt.Errorf("line %d: rule of chain %s, which the dump does not declare", n, chain)
			}
			t := l.Tables[table]
			if t == nil {
				continue
			}
			switch {
			case own.owns(table, chain):
				t.Chains[chain] = append(t.Chains[chain], line)
			case builtinChains[chain] && own.ownsJump(table, line):
				t.Jumps[chain] = append(t.Jumps[chain], line)
			}
		default:
			return nil, fmt.Errorf("line %d: %q is not a line of iptables-save", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the dump: %w", err)
	}
	l.Tables["nat"].findOwners()
	return l, nil
}

// NewLayout is an empty layout of the chains a mode owns (nil: iptables
// mode), for a render to fill.
func NewLayout(family string, own *Ownership) *Layout {
	if own == nil {
		own = iptablesMode
	}
	l := &Layout{Family: family, Tables: map[string]*LayoutTable{}, own: own}
	for _, t := range layoutTables {
		l.Tables[t] = &LayoutTable{Chains: map[string][]string{}, Jumps: map[string][]string{}}
	}
	return l
}

// Empty reports whether the layout holds no chain and no jump: a node
// where kube-proxy's iptables mode has written nothing.
func (l *Layout) Empty() bool {
	for _, t := range l.Tables {
		if len(t.Chains) > 0 || len(t.Jumps) > 0 {
			return false
		}
	}
	return true
}

// Text prints the layout as an iptables-save dump of kube-proxy's part:
// per table, its chains sorted by name, then the jumps, then each chain's
// rules.
func (l *Layout) Text() string {
	var b strings.Builder
	for _, name := range layoutTables {
		t := l.Tables[name]
		if len(t.Chains) == 0 && len(t.Jumps) == 0 {
			continue
		}
		b.WriteString("*" + name + "\n")
		chains := slices.Sorted(maps.Keys(t.Chains))
		for _, c := range chains {
			b.WriteString(":" + c + " - [0:0]\n")
		}
		for _, c := range []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"} {
			for _, r := range t.Jumps[c] {
				b.WriteString(r + "\n")
			}
		}
		for _, c := range chains {
			for _, r := range t.Chains[c] {
				b.WriteString(r + "\n")
			}
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}
