package iptables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

// ErrNotTranslated marks kernel state the legacy reader does not print as
// iptables-save would: iptables-legacy-save must read it.
var ErrNotTranslated = errors.New("not translated")

// ne is the byte order of x_tables' own numbers (addresses and NAT ports
// are in network order).
var ne = binary.NativeEndian

// xtFamily is the layout of one family's x_tables entries
// (struct ipt_entry, struct ip6t_entry); xt asks the kernel for them.
type xtFamily struct {
	name    string
	xt      xtables.Family
	addrLen int
	// offsets in an entry
	iniface, proto, flags, invflags, targetOffset, nextOffset, counters int
	entrySize                                                           int
	gotoFlag, fragFlag                                                  byte
}

// xtFamilies are the families' layouts, from linux/netfilter_ipv4/ip_tables.h
// and linux/netfilter_ipv6/ip6_tables.h.
var xtFamilies = map[string]*xtFamily{
	famIPv4: {name: famIPv4, xt: xtables.IPv4, addrLen: 4,
		iniface: 16, proto: 80, flags: 82, invflags: 83, targetOffset: 88, nextOffset: 90, counters: 96, entrySize: 112,
		gotoFlag: 0x02, fragFlag: 0x01},
	famIPv6: {name: famIPv6, xt: xtables.IPv6, addrLen: 16,
		iniface: 64, proto: 128, flags: 131, invflags: 132, targetOffset: 140, nextOffset: 142, counters: 152, entrySize: 168,
		gotoFlag: 0x04},
}

// The entry's inverse flags (IPT_INV_*, IP6T_INV_* share them).
const (
	invViaIn  = 0x01
	invViaOut = 0x02
	invSrcIP  = 0x08
	invDstIP  = 0x10
	invFrag   = 0x20
	invProto  = 0x40
)

// tableInfo is what the kernel tells of a table before its entries: where
// each built-in chain starts (hookEntry) and ends (underflow, its policy).
type tableInfo struct {
	validHooks uint32
	hookEntry  [5]uint32
	underflow  [5]uint32
	entries    uint32
	size       uint32
}

// hookNames are the built-in chains by hook number.
var hookNames = [5]string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}

// xtEntry is one entry of a table's blob.
type xtEntry struct {
	off    uint32
	e      []byte // the whole entry
	target []byte // its target: header and data
}

func (x xtEntry) targetName() string { return cString(x.target[2:31]) }

// isTarget tells whether the entry's target is the one named, without
// making a string of its name.
func (x xtEntry) isTarget(name string) bool {
	n := x.target[2:31]
	return len(name) < len(n) && string(n[:len(name)]) == name && n[len(name)] == 0
}

// xtChain is a chain of the blob: its entries, the last of which is its
// policy (a built-in chain's verdict, a user chain's RETURN).
type xtChain struct {
	name    string
	builtin bool
	head    uint32 // offset of its first entry (a user chain's ERROR entry)
	foot    uint32 // offset of its policy entry
	// entries are a part of the table's entries (all in one array).
	entries []xtEntry
}

// printTable prints a table's blob as iptables-legacy-save does: its
// chains (built-in ones in the kernel's order, then the others by name),
// each with its policy and counters, then their rules.
//
// done, when set, is told of each span of the blob [lo, hi) whose entries
// are printed and will not be read again: the caller may give their
// memory back while the rest is printed. The text comes in pieces, to be
// joined.
func printTable(fam *xtFamily, name string, blob []byte, info tableInfo, done func(lo, hi uint32)) ([]string, error) {
	chains, err := splitChains(fam, blob, info)
	if err != nil {
		return nil, err
	}
	order := make([]*xtChain, 0, len(chains))
	var user []*xtChain
	for _, c := range chains {
		if c.builtin {
			order = append(order, c)
		} else {
			user = append(user, c)
		}
	}
	sort.SliceStable(user, func(i, j int) bool { return user[i].name < user[j].name })
	order = append(order, user...)
	// Jumps name their chain by an offset inside it; user chains are in
	// the blob's order, which is the order of their offsets.
	jumps := jumpTargets(chains)

	// A large table's rules are printed in two halves at once, the second
	// into a text of its own: the first half goes on the caller's CPU
	// right after the kernel's copy, the second on another.
	first, second := order, []*xtChain(nil)
	if total := ruleCount(order); total >= parallelPrintRules {
		half, n := 0, 0
		for half < len(order) && n < total/2 {
			n += len(order[half].entries)
			half++
		}
		first, second = order[:half], order[half:]
	}
	// The text is about a third of the entries' size (kube-proxy's 0.32):
	// room for each half at once, not twice over as it grows.
	var out strings.Builder
	if len(second) > 0 {
		out.Grow(len(blob) / 5)
	} else {
		out.Grow(len(blob) / 3)
	}
	out.WriteString("*" + name + "\n")
	b := make([]byte, 0, 512)
	for _, c := range order {
		b = append(b[:0], ':')
		b = append(b, c.name...)
		if !c.builtin {
			b = append(b, " - [0:0]\n"...)
		} else {
			pol := c.entries[len(c.entries)-1]
			v, err := standardVerdict(pol)
			if err != nil {
				return nil, fmt.Errorf("chain %s: policy at offset %d: %w", c.name, pol.off, err)
			}
			b = append(b, ' ')
			b = append(b, v...)
			b = append(b, " ["...)
			b = strconv.AppendUint(b, ne.Uint64(pol.e[fam.counters:]), 10)
			b = append(b, ':')
			b = strconv.AppendUint(b, ne.Uint64(pol.e[fam.counters+8:]), 10)
			b = append(b, "]\n"...)
		}
		out.Write(b)
	}
	var rest strings.Builder
	var restErr error
	finished := make(chan struct{})
	if len(second) > 0 {
		go func() {
			defer close(finished)
			rest.Grow(len(blob) / 5)
			restErr = printRules(&rest, fam, second, jumps, done)
		}()
	} else {
		close(finished)
	}
	err = printRules(&out, fam, first, jumps, done)
	<-finished
	if err == nil {
		err = restErr
	}
	if err != nil {
		return nil, err
	}
	return []string{out.String(), rest.String(), "COMMIT\n"}, nil
}

// parallelPrintRules is the size of a table whose rules are printed in two
// halves at once (see printTable): a node of a few thousand Services.
const parallelPrintRules = 20000

func ruleCount(chains []*xtChain) int {
	n := 0
	for _, c := range chains {
		n += len(c.entries)
	}
	return n
}

// printRules prints the rules of chains, in order, and tells done (when
// set) of the spans of the blob they lie in, once printed: a run of
// chains that follow each other there (the kernel keeps user chains
// sorted by name, as they are printed) at least releaseSpan long.
func printRules(out *strings.Builder, fam *xtFamily, chains []*xtChain, jumps jumpTargets, done func(lo, hi uint32)) error {
	names := names{}
	b := make([]byte, 0, 512)
	var lo, hi uint32
	for _, c := range chains {
		if done != nil {
			first, last := c.entries[0], c.entries[len(c.entries)-1]
			if first.off != hi || hi-lo >= releaseSpan {
				if hi > lo {
					done(lo, hi)
				}
				lo = first.off
			}
			hi = last.off + uint32(len(last.e))
		}
		rules := c.entries[:len(c.entries)-1]
		if !c.builtin {
			rules = rules[1:] // the ERROR entry that names it
		}
		for _, r := range rules {
			var err error
			if b, err = appendRule(b[:0], fam, c.name, r, jumps, names); err != nil {
				return fmt.Errorf("chain %s: rule at offset %d: %w", c.name, r.off, err)
			}
			out.Write(b)
		}
	}
	if done != nil && hi > lo {
		done(lo, hi)
	}
	return nil
}

// releaseSpan is the least span of printed entries told to printRules'
// done at once.
const releaseSpan = 4 << 20

// splitChains cuts the blob into its entries and chains: a built-in chain
// starts at its hook's entry, a user chain at an ERROR entry naming it,
// and the last entry (an ERROR entry) ends the table.
func splitChains(fam *xtFamily, blob []byte, info tableInfo) ([]*xtChain, error) {
	// The entries of every chain in one array, the chains in another:
	// a large table has half a million entries in a hundred thousand
	// chains.
	all := make([]xtEntry, 0, info.entries)
	var store []xtChain
	var chains []*xtChain
	var cur *xtChain
	start := 0
	for off := uint32(0); off < uint32(len(blob)); {
		if len(blob)-int(off) < fam.entrySize {
			return nil, fmt.Errorf("entry at offset %d: %d bytes left, an entry needs %d", off, len(blob)-int(off), fam.entrySize)
		}
		e := blob[off:]
		tOff, next := uint32(ne.Uint16(e[fam.targetOffset:])), uint32(ne.Uint16(e[fam.nextOffset:]))
		switch {
		case next < uint32(fam.entrySize) || off+next > uint32(len(blob)):
			return nil, fmt.Errorf("entry at offset %d: its size %d runs out of the table (%d bytes)", off, next, len(blob))
		case tOff < uint32(fam.entrySize) || tOff+32 > next:
			return nil, fmt.Errorf("entry at offset %d: its target at %d is outside it (%d bytes)", off, tOff, next)
		}
		e = e[:next]
		x := xtEntry{off: off, e: e, target: e[tOff:]}
		if ts := int(ne.Uint16(x.target)); ts < 32 || ts > len(x.target) {
			return nil, fmt.Errorf("entry at offset %d: its target's size %d is wrong", off, ts)
		} else {
			x.target = x.target[:ts]
		}
		last := off+next == uint32(len(blob))
		if last {
			if !x.isTarget("ERROR") {
				return nil, fmt.Errorf("the table's last entry (offset %d) is not its end (ERROR)", off)
			}
			break
		}
		var c xtChain
		switch h := hookAt(info, off); {
		case x.isTarget("ERROR"):
			c = xtChain{name: cString(x.target[32:]), head: off}
		case h >= 0:
			c = xtChain{name: hookNames[h], builtin: true, head: off}
		case cur == nil:
			return nil, fmt.Errorf("entry at offset %d belongs to no chain", off)
		}
		if c.name != "" {
			if cur != nil {
				cur.entries = all[start:len(all):len(all)]
			}
			if len(store) == cap(store) {
				store = make([]xtChain, 0, max(64, 2*cap(store)))
			}
			store = append(store, c)
			cur, start = &store[len(store)-1], len(all)
			chains = append(chains, cur)
		}
		all = append(all, x)
		cur.foot = off
		off += next
	}
	if cur != nil {
		cur.entries = all[start:len(all):len(all)]
	}
	for _, c := range chains {
		if n := len(c.entries); n == 0 || (!c.builtin && n < 2) {
			return nil, fmt.Errorf("chain %s has no policy entry", c.name)
		}
	}
	return chains, nil
}

// hookAt is the hook whose built-in chain starts at off, or -1.
func hookAt(info tableInfo, off uint32) int {
	for h := range hookNames {
		if info.validHooks&(1<<h) != 0 && info.hookEntry[h] == off {
			return h
		}
	}
	return -1
}

// jumpTargets finds the user chain a jump's offset lands in.
type jumpTargets []*xtChain

func (j jumpTargets) at(off uint32) (string, bool) {
	i := sort.Search(len(j), func(i int) bool { return j[i].foot >= off })
	if i < len(j) && !j[i].builtin && j[i].head <= off {
		return j[i].name, true
	}
	return "", false
}

// standardVerdict is a standard target's verdict, by name.
func standardVerdict(x xtEntry) (string, error) {
	if !x.isTarget("") || len(x.target) < 36 {
		return "", fmt.Errorf("not a standard target (%q)", x.targetName())
	}
	switch v := int32(ne.Uint32(x.target[32:])); v {
	case -1:
		return "DROP", nil
	case -2:
		return "ACCEPT", nil
	case -4:
		return "QUEUE", nil
	case -5:
		return "RETURN", nil
	default:
		return "", fmt.Errorf("verdict %d", v)
	}
}
