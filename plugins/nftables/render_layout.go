package nftables

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// KubeProxyTable is the name of the table kube-proxy's nftables mode
// owns in the ip and ip6 families.
const KubeProxyTable = "kube-proxy"

// Layout is kube-proxy's nftables table of one family, reduced to what
// kube-proxy decides: chains with their rules as text, and sets and maps
// with their elements as text. Handles and counters are left out.
type Layout struct {
	// Family is the table's nft family: ip or ip6.
	Family string
	Chains map[string]*LayoutChain
	Sets   map[string]*LayoutSet
}

// LayoutChain is one chain of a Layout. Type, Hook, Prio and Policy are
// set for base chains only.
type LayoutChain struct {
	Type, Hook string
	Prio       int
	Policy     string
	Comment    string
	// Rules are in order, each as Rule.Text prints it.
	Rules []string
}

// LayoutSet is one set or map of a Layout.
type LayoutSet struct {
	IsMap    bool
	KeyType  []string
	DataType []string
	Flags    []string
	// Timeout is the default element timeout in seconds (0: none).
	Timeout int64
	// Size is the declared maximum number of elements (0: none).
	Size    int
	Comment string
	// Elements are sorted, each as Element.String prints it.
	Elements []string
}

// nftFamily maps IPv4 and IPv6 to the nft family of kube-proxy's table.
func nftFamily(family string) string {
	if family == "IPv6" {
		return "ip6"
	}
	return "ip"
}

// ReadLayout is the kube-proxy table of the family (IPv4 or IPv6) in a
// parsed ruleset, as a Layout; false when the ruleset has no such table.
func ReadLayout(rs *Ruleset, family string) (*Layout, bool) {
	fam := nftFamily(family)
	for _, t := range rs.Tables {
		if t.Family != fam || t.Name != KubeProxyTable {
			continue
		}
		l := newLayout(fam)
		for _, c := range t.Chains {
			lc := &LayoutChain{Type: c.Type, Hook: c.Hook, Prio: c.Prio, Policy: c.Policy, Comment: c.Comment}
			for _, r := range c.rules() {
				lc.Rules = append(lc.Rules, r.Text())
			}
			l.Chains[c.Name] = lc
		}
		for _, s := range t.Sets {
			ls := &LayoutSet{IsMap: s.IsMap, KeyType: s.KeyType, DataType: s.DataType, Flags: s.Flags,
				Timeout: s.Timeout, Size: s.Size, Comment: s.Comment}
			for _, e := range s.Elements {
				ls.Elements = append(ls.Elements, e.String())
			}
			sort.Strings(ls.Elements)
			l.Sets[s.Name] = ls
		}
		return l, true
	}
	return nil, false
}

func newLayout(family string) *Layout {
	return &Layout{Family: family, Chains: map[string]*LayoutChain{}, Sets: map[string]*LayoutSet{}}
}

// Equal lists how o differs from l, one line each, sorted by chain and
// set name: "missing" is in l and not in o, "extra" is in o and not in l.
// Rules of a chain compare in order; set elements compare as sorted
// lists, since nft lists them in an order of its own. Nothing is listed
// when the layouts are equal.
func (l *Layout) Equal(o *Layout) []string {
	var out []string
	if l.Family != o.Family {
		out = append(out, fmt.Sprintf("family: %s, other has %s", l.Family, o.Family))
	}
	for _, name := range unionKeys(l.Chains, o.Chains) {
		a, b := l.Chains[name], o.Chains[name]
		switch {
		case b == nil:
			out = append(out, "chain "+name+": missing")
		case a == nil:
			out = append(out, "chain "+name+": extra")
		default:
			out = append(out, a.diff(name, b)...)
		}
	}
	for _, name := range unionKeys(l.Sets, o.Sets) {
		a, b := l.Sets[name], o.Sets[name]
		switch {
		case b == nil:
			out = append(out, "set "+name+": missing")
		case a == nil:
			out = append(out, "set "+name+": extra")
		default:
			out = append(out, a.diff(name, b)...)
		}
	}
	return out
}

// diff lists how chain b differs from chain a.
func (a *LayoutChain) diff(name string, b *LayoutChain) []string {
	var out []string
	if a.Type != b.Type || a.Hook != b.Hook || a.Prio != b.Prio || a.Policy != b.Policy {
		out = append(out, fmt.Sprintf("chain %s: base chain %s/%s/%d/%s, other has %s/%s/%d/%s",
			name, a.Type, a.Hook, a.Prio, a.Policy, b.Type, b.Hook, b.Prio, b.Policy))
	}
	// nft's JSON leaves chain comments out (1.0.6 does), so a comment
	// is compared only where both sides have one.
	if a.Comment != b.Comment && a.Comment != "" && b.Comment != "" {
		out = append(out, fmt.Sprintf("chain %s: comment %q, other has %q", name, a.Comment, b.Comment))
	}
	missing, extra := sequenceDiff(a.Rules, b.Rules)
	for _, r := range missing {
		out = append(out, "chain "+name+": rule missing: "+r)
	}
	for _, r := range extra {
		out = append(out, "chain "+name+": rule extra: "+r)
	}
	return out
}

// diff lists how set b differs from set a.
func (a *LayoutSet) diff(name string, b *LayoutSet) []string {
	var out []string
	field := func(what string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			out = append(out, fmt.Sprintf("set %s: %s %v, other has %v", name, what, x, y))
		}
	}
	field("map", a.IsMap, b.IsMap)
	field("key type", a.KeyType, b.KeyType)
	field("data type", a.DataType, b.DataType)
	field("flags", a.Flags, b.Flags)
	field("timeout", a.Timeout, b.Timeout)
	field("size", a.Size, b.Size)
	field("comment", a.Comment, b.Comment)
	if strings.HasPrefix(name, prefixAffinity) {
		// Its elements are the clients the packet path pins, not
		// kube-proxy's.
		return out
	}
	missing, extra := multisetDiff(a.Elements, b.Elements)
	for _, e := range missing {
		out = append(out, "set "+name+": element missing: "+e)
	}
	for _, e := range extra {
		out = append(out, "set "+name+": element extra: "+e)
	}
	return out
}

// sequenceDiff is what a longest common subsequence of a and b leaves
// out of each: a's lines missing from b, and b's extra lines.
func sequenceDiff(a, b []string) (missing, extra []string) {
	if slices.Equal(a, b) {
		return nil, nil
	}
	// lcs[i][j] is the length of the longest common subsequence of
	// a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			missing = append(missing, a[i])
			i++
		default:
			extra = append(extra, b[j])
			j++
		}
	}
	return append(missing, a[i:]...), append(extra, b[j:]...)
}

// multisetDiff compares two lists as sorted multisets.
func multisetDiff(a, b []string) (missing, extra []string) {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			missing = append(missing, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			extra = append(extra, b[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return missing, extra
}

// unionKeys are the keys of both maps, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// String lists the layout in a stable order, for reading in test
// failures and reports.
func (l *Layout) String() string {
	var b strings.Builder
	for _, name := range unionKeys(l.Chains, nil) {
		c := l.Chains[name]
		fmt.Fprintf(&b, "chain %s", name)
		if c.Hook != "" {
			fmt.Fprintf(&b, " { type %s hook %s priority %d; policy %s; }", c.Type, c.Hook, c.Prio, c.Policy)
		}
		b.WriteString("\n")
		for _, r := range c.Rules {
			b.WriteString("\t" + r + "\n")
		}
	}
	for _, name := range unionKeys(l.Sets, nil) {
		s := l.Sets[name]
		fmt.Fprintf(&b, "set %s map=%v key=%v data=%v flags=%v timeout=%d size=%d comment=%q\n",
			name, s.IsMap, s.KeyType, s.DataType, s.Flags, s.Timeout, s.Size, s.Comment)
		for _, e := range s.Elements {
			b.WriteString("\t" + e + "\n")
		}
	}
	return b.String()
}
