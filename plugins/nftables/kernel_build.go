//go:build linux

package nftables

import (
	"bytes"
	"cmp"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// buildKernel turns what a netlink read dumped into a ruleset, in the
// kernel's order, as nft lists it.
func buildKernel(k *kernelState) (*Ruleset, error) {
	rs := &Ruleset{Source: KernelSource}
	lits := kLits{}
	tables := map[string]*Table{}
	key := func(fam uint8, name string) string { return fmt.Sprintf("%d %s", fam, name) }
	for _, kt := range k.tables {
		t := &Table{Family: familyName(kt.family), Name: kt.name, Handle: int(kt.handle), Comment: kt.comment,
			chains: map[string]*Chain{}, sets: map[string]*Set{}}
		tables[key(kt.family, kt.name)] = t
		rs.Tables = append(rs.Tables, t)
	}
	table := func(fam uint8, name, what string) (*Table, error) {
		if t := tables[key(fam, name)]; t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("nftables: %s: %s of table %s %s, which the dump does not hold (changed while read?)", KernelSource, what, familyName(fam), name)
	}
	sets := map[string]*kSet{}
	for _, s := range k.sets {
		t, err := table(s.family, s.table, "set "+s.name)
		if err != nil {
			return nil, err
		}
		sets[key(s.family, s.table)+" "+s.name] = s
		if s.flags&unix.NFT_SET_ANONYMOUS != 0 {
			continue
		}
		set, err := lits.kNamedSet(s)
		if err != nil {
			return nil, fmt.Errorf("nftables: %s: table %s: %w", KernelSource, t.ID(), err)
		}
		t.sets[set.Name] = set
		t.Sets = append(t.Sets, set)
	}
	for _, kc := range k.chains {
		t, err := table(kc.family, kc.table, "chain "+kc.name)
		if err != nil {
			return nil, err
		}
		if kc.binding {
			return nil, fmt.Errorf("nftables: %s: table %s: %w: chain %s is bound to a rule", KernelSource, t.ID(), ErrNotTranslated, kc.name)
		}
		c, _ := t.chainNamed(kc.name)
		c.Handle, c.Comment = int(kc.handle), kc.comment
		if kc.hooked {
			c.Type, c.Hook, c.Prio = kc.typ, hookName(kc.family, kc.hooknum), int(kc.prio)
			c.Policy = "accept"
			if kc.hasPolicy && kc.policy == 0 {
				c.Policy = "drop"
			}
		}
	}
	for i := range k.rules {
		kr := &k.rules[i]
		t, err := table(kr.family, kr.table, "rule of chain "+kr.chain)
		if err != nil {
			return nil, err
		}
		c := t.chains[kr.chain]
		if c == nil {
			return nil, fmt.Errorf("nftables: %s: table %s: rule handle %d of chain %s, which the dump does not hold (changed while read?)", KernelSource, t.ID(), kr.handle, kr.chain)
		}
		tkey := key(kr.family, kr.table)
		stmts, err := translateRule(lits, t.Family, t.ID(), kr, func(name string) *kSet { return sets[tkey+" "+name] })
		if err != nil {
			return nil, fmt.Errorf("nftables: %s: table %s chain %s rule handle %d: %w", KernelSource, t.ID(), kr.chain, kr.handle, err)
		}
		c.Rules = append(c.Rules, &Rule{Chain: kr.chain, Handle: int(kr.handle), Comment: kr.comment, Stmts: stmts,
			Path: fmt.Sprintf("table %s chain %s handle %d", t.ID(), kr.chain, kr.handle)})
	}
	for _, o := range k.objs {
		t, err := table(o.family, o.table, o.kind+" "+o.name)
		if err != nil {
			return nil, err
		}
		if o.kind == "counter" {
			t.Counters = append(t.Counters, &Counter{Name: o.name, Handle: int(o.handle), Packets: int64(o.packets), Bytes: int64(o.bytes)})
			continue
		}
		rs.objectNote(t, o)
	}
	for _, o := range k.flowtables {
		t, err := table(o.family, o.table, o.kind+" "+o.name)
		if err != nil {
			return nil, err
		}
		rs.objectNote(t, o)
	}
	for _, t := range rs.Tables {
		for _, s := range t.Sets {
			s.buildIndex()
		}
	}
	return rs, nil
}

// objectNote keeps an object the walk does not evaluate, as Parse does.
func (rs *Ruleset) objectNote(t *Table, o kObj) {
	t.Objects = append(t.Objects, Object{Kind: o.kind, Name: o.name, Handle: int(o.handle)})
	rs.Notes = append(rs.Notes, Note{Family: t.Family, Text: fmt.Sprintf("%s: %s %q in table %s kept; the walk does not evaluate it", rs.Source, o.kind, o.name, t.ID())})
}

// kNamedSet is a named set or map with its elements.
func (l kLits) kNamedSet(s *kSet) (*Set, error) {
	set := &Set{Name: s.name, Handle: int(s.handle), Comment: s.comment, Size: int(s.size), Timeout: int64(s.timeoutMS / 1000)}
	if s.hasObj {
		return nil, fmt.Errorf("%w: map %s of objects", ErrNotTranslated, s.name)
	}
	var ok bool
	if set.KeyType, ok = typeParts(s.keyType); !ok {
		return nil, fmt.Errorf("%w: key type %#x of set %s", ErrNotTranslated, s.keyType, s.name)
	}
	if s.hasData {
		set.IsMap = true
		if set.DataType, ok = typeParts(s.dataType); !ok {
			return nil, fmt.Errorf("%w: data type %#x of map %s", ErrNotTranslated, s.dataType, s.name)
		}
	}
	for _, f := range []struct {
		bit  uint32
		name string
	}{{unix.NFT_SET_CONSTANT, "constant"}, {unix.NFT_SET_INTERVAL, "interval"}, {unix.NFT_SET_TIMEOUT, "timeout"}} {
		if s.flags&f.bit != 0 {
			set.Flags = append(set.Flags, f.name)
		}
	}
	els, err := l.kElements(s)
	if err != nil {
		return nil, err
	}
	set.Elements = els
	return set, nil
}

// kElements are a set's elements as nft prints them: an interval set's
// start and end elements become one prefix or range.
func (l kLits) kElements(s *kSet) ([]*Element, error) {
	keyTypes, ok := typeParts(s.keyType)
	if !ok {
		return nil, fmt.Errorf("%w: key type %#x of set %s", ErrNotTranslated, s.keyType, s.name)
	}
	var dataTypes []string
	if s.hasData {
		if dataTypes, ok = typeParts(s.dataType); !ok {
			return nil, fmt.Errorf("%w: data type %#x of map %s", ErrNotTranslated, s.dataType, s.name)
		}
	}
	interval := s.flags&unix.NFT_SET_INTERVAL != 0
	if interval && len(keyTypes) == 1 {
		if hostOrder(keyTypes[0]) {
			return nil, fmt.Errorf("%w: interval set %s of %s", ErrNotTranslated, s.name, keyTypes[0])
		}
		return l.kIntervals(s, keyTypes[0], dataTypes)
	}
	// In the order of their keys, as nft lists them.
	elems := slices.Clone(s.elems)
	if len(keyTypes) == 1 && hostOrder(keyTypes[0]) {
		slices.SortStableFunc(elems, func(a, b kElem) int {
			x, _ := kValueInt(a.key, keyTypes[0])
			y, _ := kValueInt(b.key, keyTypes[0])
			return cmp.Compare(x, y)
		})
	} else {
		slices.SortStableFunc(elems, func(a, b kElem) int { return bytes.Compare(a.key, b.key) })
	}
	out := make([]*Element, 0, len(elems))
	for i := range elems {
		e := &elems[i]
		if e.exprs > 0 {
			return nil, fmt.Errorf("%w: element with expressions in set %s", ErrNotTranslated, s.name)
		}
		k, err := l.kKey(e.key, e.keyEnd, keyTypes)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.name, err)
		}
		el := &Element{Key: k, Comment: e.comment, Timeout: int64(e.timeoutMS / 1000), Expires: int64(e.expiresMS / 1000)}
		if e.timeoutMS == s.timeoutMS {
			el.Timeout = 0
		}
		if err := l.kData(el, e, dataTypes, s.name); err != nil {
			return nil, err
		}
		out = append(out, el)
	}
	return out, nil
}

// kKey is an element's key; with keyEnd (a concatenation of ranges), each
// part that spans more than one value is a prefix or a range.
func (l kLits) kKey(key, keyEnd []byte, types []string) (Expr, error) {
	var parts []Expr
	off := 0
	for _, t := range types {
		n := typeSize(t)
		if n == 0 || off+n > len(key) {
			return nil, fmt.Errorf("%w: a key of %d bytes for %s", ErrNotTranslated, len(key), strings.Join(types, " . "))
		}
		v := l.kValue(key[off:off+n], t)
		if v == nil {
			return nil, fmt.Errorf("%w: a %s key %x", ErrNotTranslated, t, key[off:off+n])
		}
		if keyEnd != nil && !bytes.Equal(key[off:off+n], keyEnd[off:off+n]) {
			v = l.spanExpr(key[off:off+n], keyEnd[off:off+n], t)
			if v == nil {
				return nil, fmt.Errorf("%w: a %s range", ErrNotTranslated, t)
			}
		}
		parts = append(parts, v)
		off += (n + 3) / 4 * 4
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return &Concat{Parts: parts}, nil
}

// spanExpr is lo..hi (inclusive) as nft prints it: an address prefix
// when it is one, else a range.
func (l kLits) spanExpr(lo, hi []byte, typ string) Expr {
	if typ == "ipv4_addr" || typ == "ipv6_addr" {
		a, _ := netip.AddrFromSlice(lo)
		for bits := 0; bits <= a.BitLen(); bits++ {
			p := netip.PrefixFrom(a, bits).Masked()
			if p.Addr() == a && lastAddr(p) == mustAddr(hi) {
				return &Prefix{Addr: newLiteral(a.String(), false), Len: bits}
			}
		}
	}
	lo2, hi2 := l.kValue(lo, typ), l.kValue(hi, typ)
	if lo2 == nil || hi2 == nil {
		return nil
	}
	return &Range{Lo: lo2, Hi: hi2}
}

func mustAddr(b []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(b)
	return a
}

// lastAddr is the last address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	host := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// kIntervals pairs an interval set's elements: each start with the end
// element after it (which holds the first value past the interval).
func (l kLits) kIntervals(s *kSet, typ string, dataTypes []string) ([]*Element, error) {
	elems := slices.Clone(s.elems)
	slices.SortStableFunc(elems, func(a, b kElem) int { return bytes.Compare(a.key, b.key) })
	var out []*Element
	for i := 0; i < len(elems); i++ {
		e := &elems[i]
		if e.exprs > 0 {
			return nil, fmt.Errorf("%w: element with expressions in set %s", ErrNotTranslated, s.name)
		}
		if e.flags&unix.NFT_SET_ELEM_INTERVAL_END != 0 {
			continue
		}
		hi := maxValue(len(e.key))
		if i+1 < len(elems) && elems[i+1].flags&unix.NFT_SET_ELEM_INTERVAL_END != 0 {
			hi = minusOne(elems[i+1].key)
		}
		var k Expr
		if bytes.Equal(e.key, hi) {
			k = l.kValue(e.key, typ)
		} else {
			k = l.spanExpr(e.key, hi, typ)
		}
		if k == nil {
			return nil, fmt.Errorf("%w: an interval of %s in set %s", ErrNotTranslated, typ, s.name)
		}
		el := &Element{Key: k, Comment: e.comment, Timeout: int64(e.timeoutMS / 1000), Expires: int64(e.expiresMS / 1000)}
		if err := l.kData(el, e, dataTypes, s.name); err != nil {
			return nil, err
		}
		out = append(out, el)
	}
	return out, nil
}

func maxValue(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }

// minusOne is b - 1, big-endian.
func minusOne(b []byte) []byte {
	v := new(big.Int).SetBytes(b)
	v.Sub(v, big.NewInt(1))
	out := make([]byte, len(b))
	return v.FillBytes(out)
}

// kData sets a map element's data.
func (l kLits) kData(el *Element, e *kElem, types []string, set string) error {
	if types == nil {
		return nil
	}
	if e.verdict != nil {
		v, err := verdictOf(e.verdict)
		if err != nil {
			return err
		}
		el.setData(v)
		return nil
	}
	d, err := l.kKey(e.data, nil, types)
	if err != nil {
		return fmt.Errorf("map %s: data: %w", set, err)
	}
	el.setData(d)
	return nil
}
