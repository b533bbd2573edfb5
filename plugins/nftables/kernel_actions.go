//go:build linux

package nftables

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// setRef is a lookup's set: a reference by name, or the elements of an
// anonymous set inline, as nft prints them.
func (c *ruleCtx) setRef(name string) (Expr, *kSet, error) {
	s := c.sets(name)
	if s == nil {
		return nil, nil, fmt.Errorf("set %s not in table %s", name, c.table)
	}
	if s.flags&unix.NFT_SET_ANONYMOUS == 0 {
		return &SetRef{Name: name}, s, nil
	}
	els, err := c.lits.kElements(s)
	if err != nil {
		return nil, nil, err
	}
	return &AnonSet{Elems: els}, s, nil
}

func (c *ruleCtx) lookup(e kExpr) error {
	ref, s, err := c.setRef(e.str(unix.NFTA_LOOKUP_SET))
	if err != nil {
		return err
	}
	keyTypes, ok := typeParts(s.keyType)
	if !ok {
		return fmt.Errorf("%w: key type %#x of set %s", ErrNotTranslated, s.keyType, s.name)
	}
	key, err := c.operand(e.u32(unix.NFTA_LOOKUP_SREG), keyTypes)
	if err != nil {
		return err
	}
	if !e.has(unix.NFTA_LOOKUP_DREG) {
		op := "=="
		if e.u32(unix.NFTA_LOOKUP_FLAGS)&unix.NFT_LOOKUP_F_INV != 0 {
			op = "!="
		}
		c.add(&Match{Op: op, Left: key, Right: ref})
		return nil
	}
	dreg := e.u32(unix.NFTA_LOOKUP_DREG)
	if dreg == unix.NFT_REG_VERDICT {
		c.add(&VMap{Key: key, Data: ref})
		return nil
	}
	dataTypes, ok := typeParts(s.dataType)
	if !ok {
		return fmt.Errorf("%w: data type %#x of map %s", ErrNotTranslated, s.dataType, s.name)
	}
	typ := dataTypes[0]
	if len(dataTypes) > 1 {
		typ = strings.Join(dataTypes, " . ")
	}
	return c.load(dreg, reg{expr: &MapLookup{Key: key, Data: ref}, typ: typ, size: int(s.dataLen)})
}

// natFlags are the NAT range flags nft names, in its order.
var natFlags = []struct {
	bit  uint32
	name string
}{{0x4, "random"}, {0x10, "fully-random"}, {0x8, "persistent"}, {0x40, "netmap"}}

func (c *ruleCtx) nat(e kExpr) error {
	n := &NAT{}
	var addrMin, addrMax, protoMin, protoMax, flags uint16
	switch e.name {
	case "nat":
		n.Kind = map[uint32]string{unix.NFT_NAT_SNAT: "snat", unix.NFT_NAT_DNAT: "dnat"}[e.u32(unix.NFTA_NAT_TYPE)]
		addrMin, addrMax, protoMin, protoMax, flags = unix.NFTA_NAT_REG_ADDR_MIN, unix.NFTA_NAT_REG_ADDR_MAX, unix.NFTA_NAT_REG_PROTO_MIN, unix.NFTA_NAT_REG_PROTO_MAX, unix.NFTA_NAT_FLAGS
	case "masq":
		n.Kind = "masquerade"
		protoMin, protoMax, flags = unix.NFTA_MASQ_REG_PROTO_MIN, unix.NFTA_MASQ_REG_PROTO_MAX, unix.NFTA_MASQ_FLAGS
	case "redir":
		n.Kind = "redirect"
		protoMin, protoMax, flags = unix.NFTA_REDIR_REG_PROTO_MIN, unix.NFTA_REDIR_REG_PROTO_MAX, unix.NFTA_REDIR_FLAGS
	}
	if n.Kind == "" {
		return fmt.Errorf("nat type %d", e.u32(unix.NFTA_NAT_TYPE))
	}
	if (addrMax != 0 && e.has(addrMax) && e.u32(addrMax) != e.u32(addrMin)) || (e.has(protoMax) && e.u32(protoMax) != e.u32(protoMin)) {
		return fmt.Errorf("%w: a NAT range", ErrNotTranslated)
	}
	fam := c.fam
	if e.name == "nat" {
		fam = map[uint32]string{unix.NFPROTO_IPV4: "ip", unix.NFPROTO_IPV6: "ip6"}[e.u32(unix.NFTA_NAT_FAMILY)]
		if c.fam == "inet" {
			n.Family = fam
		}
	}
	addrType := map[string]string{"ip": "ipv4_addr", "ip6": "ipv6_addr"}[fam]
	concat := false
	if addrMin != 0 && e.has(addrMin) {
		g, i, err := c.get(e.u32(addrMin))
		if err != nil {
			return err
		}
		if ml, ok := g.expr.(*MapLookup); ok && strings.Contains(g.typ, " . ") {
			// addr . port from one map: "dnat ip to KEY map { ... }".
			want := i + (typeSize(addrType)+3)/4
			if p, err := slot(e.u32(protoMin)); !e.has(protoMin) || err != nil || p != want {
				return fmt.Errorf("%w: a NAT map whose data is not the address and port", ErrNotTranslated)
			}
			n.Addr, n.Family, concat = ml, fam, true
		} else if n.Addr, err = c.operand(e.u32(addrMin), []string{addrType}); err != nil {
			return err
		}
	}
	if e.has(protoMin) && !concat {
		p, err := c.operand(e.u32(protoMin), []string{"inet_service"})
		if err != nil {
			return err
		}
		n.Port = p
	}
	fl := e.u32(flags) &^ 0x3 // the address and port flags follow the registers
	for _, f := range natFlags {
		if fl&f.bit != 0 {
			n.Flags = append(n.Flags, f.name)
			fl &^= f.bit
		}
	}
	if fl != 0 {
		return fmt.Errorf("%w: NAT flags %#x", ErrNotTranslated, fl)
	}
	c.add(n)
	return nil
}

var icmpCodes = map[string][]string{
	"icmp":   {"net-unreachable", "host-unreachable", "prot-unreachable", "port-unreachable", "", "", "", "", "", "net-prohibited", "host-prohibited", "", "", "admin-prohibited"},
	"icmpv6": {"no-route", "admin-prohibited", "", "addr-unreachable", "port-unreachable", "policy-fail", "reject-route"},
	"icmpx":  {"no-route", "port-unreachable", "host-unreachable", "admin-prohibited"},
}

func (c *ruleCtx) reject(e kExpr) error {
	r := &Reject{}
	switch e.u32(unix.NFTA_REJECT_TYPE) {
	case unix.NFT_REJECT_TCP_RST:
		r.Type = "tcp reset"
		if c.l4proto == "tcp" && c.l4dep >= 0 {
			c.drop[c.l4dep] = true
		}
		c.add(r)
		return nil
	case unix.NFT_REJECT_ICMP_UNREACH:
		r.Type = map[string]string{"ip": "icmp", "ip6": "icmpv6"}[c.l3()]
	case unix.NFT_REJECT_ICMPX_UNREACH:
		r.Type = "icmpx"
	}
	codes := icmpCodes[r.Type]
	code := int(0)
	if b := e.attr(unix.NFTA_REJECT_ICMP_CODE); len(b) > 0 {
		code = int(b[0])
	}
	if code >= len(codes) || codes[code] == "" || c.fam == "inet" || c.fam == "bridge" {
		return fmt.Errorf("%w: reject of type %d code %d in a %s table", ErrNotTranslated, e.u32(unix.NFTA_REJECT_TYPE), code, c.fam)
	}
	r.Code = codes[code]
	c.add(r)
	return nil
}

func (c *ruleCtx) dynset(e kExpr) error {
	if e.has(unix.NFTA_DYNSET_SREG_DATA) || e.has(unix.NFTA_DYNSET_EXPR) || e.has(nftaDynsetExpressions) {
		return fmt.Errorf("%w: a set statement with data or expressions", ErrNotTranslated)
	}
	op := map[uint32]string{unix.NFT_DYNSET_OP_ADD: "add", unix.NFT_DYNSET_OP_UPDATE: "update", nftDynsetOpDelete: "delete"}[e.u32(unix.NFTA_DYNSET_OP)]
	name := e.str(unix.NFTA_DYNSET_SET_NAME)
	s := c.sets(name)
	if s == nil || op == "" {
		return fmt.Errorf("%w: a set statement on %s", ErrNotTranslated, name)
	}
	keyTypes, ok := typeParts(s.keyType)
	if !ok {
		return fmt.Errorf("%w: key type %#x of set %s", ErrNotTranslated, s.keyType, name)
	}
	key, err := c.operand(e.u32(unix.NFTA_DYNSET_SREG_KEY), keyTypes)
	if err != nil {
		return err
	}
	st := &SetStmt{Op: op, Set: name, Elem: key}
	if t := e.u64(unix.NFTA_DYNSET_TIMEOUT); t != 0 && t != s.timeoutMS {
		st.Timeout = int64(t / 1000)
	}
	c.add(st)
	return nil
}
