//go:build linux

package nftables

import (
	"bytes"
	"fmt"
	"math/bits"

	"golang.org/x/sys/unix"
)

// Translating a rule's netlink expressions into the statements nft
// prints: loads into registers become the operands of the matches,
// lookups, NAT and mangling that read the registers, as nft's own
// delinearization does for the expressions kube-proxy and common tools
// write. Anything else is refused with an error naming it, so that the
// caller reads the ruleset with nft instead of guessing.

// reg is what a 32-bit register slot holds.
type reg struct {
	expr Expr
	// typ is nft's type of the value; size its length in bytes.
	typ  string
	size int
	// imm is data an immediate loaded, typed when it is read.
	imm []byte
	// masked is a bitwise AND with mask of expr (flags, prefixes).
	masked   bool
	mask     []byte
	base     Expr
	baseType string
	// prefix: the first size bytes of an address of full bytes (nft
	// loads only the bytes a prefix match tests).
	full int
}

// ruleCtx translates one rule.
type ruleCtx struct {
	lits  kLits
	fam   string
	table string
	sets  func(name string) *kSet
	regs  [16]reg
	stmts []Stmt
	// dep is the index in stmts of a match on the layer 4 protocol (or
	// the family) that a later header field implies, as nft drops it.
	l4dep, l3dep     int
	l4proto, l3proto string
	drop             map[int]bool
}

// slot maps a register number to its first 32-bit slot.
func slot(r uint32) (int, error) {
	switch {
	case r >= 1 && r <= 4:
		return int(r-1) * 4, nil
	case r >= 8 && r <= 23:
		return int(r - 8), nil
	}
	return 0, fmt.Errorf("register %d", r)
}

func (c *ruleCtx) load(r uint32, v reg) error {
	i, err := slot(r)
	if err != nil {
		return err
	}
	c.regs[i] = v
	return nil
}

func (c *ruleCtx) get(r uint32) (reg, int, error) {
	i, err := slot(r)
	if err != nil {
		return reg{}, 0, err
	}
	if c.regs[i].expr == nil && c.regs[i].imm == nil && !c.regs[i].masked {
		return reg{}, i, fmt.Errorf("register %d read before it is loaded", r)
	}
	return c.regs[i], i, nil
}

// operand reads the registers from slot i as a value of the types
// (several: a concatenation, one register per 4 bytes of each part).
func (c *ruleCtx) operand(r uint32, types []string) (Expr, error) {
	i, err := slot(r)
	if err != nil {
		return nil, err
	}
	var parts []Expr
	for _, t := range types {
		if i >= len(c.regs) {
			return nil, fmt.Errorf("concatenation past the last register")
		}
		g := c.regs[i]
		e := g.expr
		if g.imm != nil {
			e = c.lits.kValue(g.imm, t)
		}
		if e == nil || g.masked {
			return nil, fmt.Errorf("register %d does not hold a %s", r, t)
		}
		parts = append(parts, e)
		n := typeSize(t)
		if n == 0 {
			n = g.size
		}
		i += (n + 3) / 4
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return &Concat{Parts: parts}, nil
}

// add appends a statement. As nft: a statement other than a match (a
// counter, an xt extension, a verdict, ...) ends what a dependency can be
// dropped for; the protocol it said still names later header fields.
func (c *ruleCtx) add(s Stmt) {
	c.stmts = append(c.stmts, s)
	switch s.(type) {
	case *Match, *VMap:
	default:
		c.l4dep, c.l3dep = -1, -1
	}
}

// translateRule turns a rule's expressions into statements.
func translateRule(lits kLits, fam, table string, r *kRule, sets func(string) *kSet) ([]Stmt, error) {
	c := &ruleCtx{lits: lits, fam: fam, table: table, sets: sets, l4dep: -1, l3dep: -1, drop: map[int]bool{}}
	for i, e := range r.exprs {
		if err := c.expr(e); err != nil {
			return nil, fmt.Errorf("expression %d (%s): %w", i, e.name, err)
		}
	}
	out := c.stmts[:0:0]
	for i, s := range c.stmts {
		if !c.drop[i] {
			out = append(out, s)
		}
	}
	return out, nil
}

func (c *ruleCtx) expr(e kExpr) error {
	switch e.name {
	case "payload":
		return c.payload(e)
	case "meta":
		return c.meta(e)
	case "ct":
		return c.ct(e)
	case "immediate":
		return c.immediate(e)
	case "cmp":
		return c.cmp(e)
	case "bitwise":
		return c.bitwise(e)
	case "lookup":
		return c.lookup(e)
	case "range":
		return c.rangeExpr(e)
	case "fib":
		return c.fib(e)
	case "numgen":
		return c.numgen(e)
	case "nat", "masq", "redir":
		return c.nat(e)
	case "reject":
		return c.reject(e)
	case "counter":
		c.add(&CounterStmt{})
		return nil
	case "objref":
		if e.u32(unix.NFTA_OBJREF_IMM_TYPE) != 1 || !e.has(unix.NFTA_OBJREF_IMM_NAME) {
			return fmt.Errorf("an object reference other than a named counter")
		}
		c.add(&CounterStmt{Name: e.str(unix.NFTA_OBJREF_IMM_NAME)})
		return nil
	case "dynset":
		return c.dynset(e)
	case "log":
		c.add(&Log{Prefix: e.str(unix.NFTA_LOG_PREFIX)})
		return nil
	case "notrack":
		c.add(&Notrack{})
		return nil
	case "match", "target":
		c.add(&XT{Type: e.name, Name: e.str(unix.NFTA_MATCH_NAME)})
		return nil
	}
	return fmt.Errorf("%w: expression %q", ErrNotTranslated, e.name)
}

func (c *ruleCtx) payload(e kExpr) error {
	if e.has(unix.NFTA_PAYLOAD_SREG) {
		return fmt.Errorf("%w: a payload write", ErrNotTranslated)
	}
	base, off, n := e.u32(unix.NFTA_PAYLOAD_BASE), e.u32(unix.NFTA_PAYLOAD_OFFSET), e.u32(unix.NFTA_PAYLOAD_LEN)
	var p *Payload
	typ := ""
	switch base {
	case unix.NFT_PAYLOAD_NETWORK_HEADER:
		proto := c.l3()
		if f, t, full, ok := networkField(proto, off, n); ok {
			p, typ = &Payload{Protocol: proto, Field: f}, t
			if c.l3dep >= 0 {
				c.drop[c.l3dep] = true
			}
			if full != int(n) {
				return c.load(e.u32(unix.NFTA_PAYLOAD_DREG), reg{expr: p, typ: typ, size: int(n), full: full})
			}
		}
	case unix.NFT_PAYLOAD_TRANSPORT_HEADER:
		if n == 2 && (off == 0 || off == 2) {
			f := map[uint32]string{0: "sport", 2: "dport"}[off]
			proto := "th"
			switch c.l4proto {
			case "tcp", "udp", "sctp", "dccp", "udplite":
				proto = c.l4proto
				if c.l4dep >= 0 {
					c.drop[c.l4dep] = true
				}
			}
			p, typ = &Payload{Protocol: proto, Field: f}, "inet_service"
		}
	}
	if p == nil {
		return fmt.Errorf("%w: payload of base %d, offset %d, length %d", ErrNotTranslated, base, off, n)
	}
	return c.load(e.u32(unix.NFTA_PAYLOAD_DREG), reg{expr: p, typ: typ, size: int(n)})
}

// l3 is the protocol of the network header: the table's, or in an inet
// table the one a match on meta nfproto set.
func (c *ruleCtx) l3() string {
	switch c.fam {
	case "ip", "ip6":
		return c.fam
	}
	return c.l3proto
}

// networkField names a network header field: its name, type and full
// length (an address loaded in part is a prefix).
func networkField(proto string, off, n uint32) (string, string, int, bool) {
	switch proto {
	case "ip":
		switch {
		case off == 12 && n >= 1 && n <= 4:
			return "saddr", "ipv4_addr", 4, true
		case off == 16 && n >= 1 && n <= 4:
			return "daddr", "ipv4_addr", 4, true
		case off == 9 && n == 1:
			return "protocol", "inet_proto", 1, true
		}
	case "ip6":
		switch {
		case off == 8 && n >= 1 && n <= 16:
			return "saddr", "ipv6_addr", 16, true
		case off == 24 && n >= 1 && n <= 16:
			return "daddr", "ipv6_addr", 16, true
		case off == 6 && n == 1:
			return "nexthdr", "inet_proto", 1, true
		}
	}
	return "", "", 0, false
}

// metaKeys are nft's names of the meta keys read here, with their types
// (others, such as skuid, which nft prints by user name, are refused).
var metaKeys = map[uint32][2]string{
	unix.NFT_META_LEN: {"length", "integer"}, unix.NFT_META_PROTOCOL: {"protocol", "ether_type"},
	unix.NFT_META_MARK: {"mark", "mark"}, unix.NFT_META_IIFNAME: {"iifname", "ifname"},
	unix.NFT_META_OIFNAME: {"oifname", "ifname"}, unix.NFT_META_NFPROTO: {"nfproto", "nf_proto"},
	unix.NFT_META_L4PROTO: {"l4proto", "inet_proto"},
}

func (c *ruleCtx) meta(e kExpr) error {
	k, ok := metaKeys[e.u32(unix.NFTA_META_KEY)]
	if !ok {
		return fmt.Errorf("%w: meta key %d", ErrNotTranslated, e.u32(unix.NFTA_META_KEY))
	}
	m := &Meta{Key: k[0]}
	if e.has(unix.NFTA_META_SREG) {
		v, err := c.operand(e.u32(unix.NFTA_META_SREG), []string{k[1]})
		if err != nil {
			return err
		}
		c.add(&Mangle{Key: m, Value: v})
		return nil
	}
	return c.load(e.u32(unix.NFTA_META_DREG), reg{expr: m, typ: k[1], size: typeSize(k[1])})
}

var ctKeys = map[uint32][2]string{
	unix.NFT_CT_STATE: {"state", "ct_state"}, unix.NFT_CT_STATUS: {"status", "ct_status"},
	unix.NFT_CT_MARK: {"mark", "mark"}, unix.NFT_CT_DIRECTION: {"direction", "ct_dir"},
}

func (c *ruleCtx) ct(e kExpr) error {
	k, ok := ctKeys[e.u32(unix.NFTA_CT_KEY)]
	if !ok || e.has(unix.NFTA_CT_DIRECTION) {
		return fmt.Errorf("%w: ct key %d", ErrNotTranslated, e.u32(unix.NFTA_CT_KEY))
	}
	x := &CT{Key: k[0]}
	if e.has(unix.NFTA_CT_SREG) {
		v, err := c.operand(e.u32(unix.NFTA_CT_SREG), []string{k[1]})
		if err != nil {
			return err
		}
		c.add(&Mangle{Key: x, Value: v})
		return nil
	}
	return c.load(e.u32(unix.NFTA_CT_DREG), reg{expr: x, typ: k[1], size: 4})
}

func (c *ruleCtx) fib(e kExpr) error {
	if e.u32(unix.NFTA_FIB_RESULT) != unix.NFT_FIB_RESULT_ADDRTYPE {
		return fmt.Errorf("%w: fib result %d", ErrNotTranslated, e.u32(unix.NFTA_FIB_RESULT))
	}
	fl := e.u32(unix.NFTA_FIB_FLAGS)
	f := &Fib{Result: "type"}
	for _, b := range []struct {
		bit  uint32
		name string
	}{{unix.NFTA_FIB_F_SADDR, "saddr"}, {unix.NFTA_FIB_F_DADDR, "daddr"}, {unix.NFTA_FIB_F_MARK, "mark"},
		{unix.NFTA_FIB_F_IIF, "iif"}, {unix.NFTA_FIB_F_OIF, "oif"}} {
		if fl&b.bit != 0 {
			f.Flags = append(f.Flags, b.name)
			fl &^= b.bit
		}
	}
	if fl != 0 {
		return fmt.Errorf("%w: fib flags %#x", ErrNotTranslated, fl)
	}
	return c.load(e.u32(unix.NFTA_FIB_DREG), reg{expr: f, typ: "fib_addrtype", size: 4})
}

func (c *ruleCtx) numgen(e kExpr) error {
	mode := map[uint32]string{unix.NFT_NG_INCREMENTAL: "inc", unix.NFT_NG_RANDOM: "random"}[e.u32(unix.NFTA_NG_TYPE)]
	if mode == "" {
		return fmt.Errorf("%w: numgen type %d", ErrNotTranslated, e.u32(unix.NFTA_NG_TYPE))
	}
	n := &Numgen{Mode: mode, Mod: int(e.u32(unix.NFTA_NG_MODULUS)), Offset: int(e.u32(unix.NFTA_NG_OFFSET))}
	return c.load(e.u32(unix.NFTA_NG_DREG), reg{expr: n, typ: "integer", size: 4})
}

func (c *ruleCtx) immediate(e kExpr) error {
	val, v := dataValue2(e.attr(unix.NFTA_IMMEDIATE_DATA))
	if e.u32(unix.NFTA_IMMEDIATE_DREG) == unix.NFT_REG_VERDICT {
		if v == nil {
			return fmt.Errorf("an immediate verdict without a verdict")
		}
		vd, err := verdictOf(v)
		if err != nil {
			return err
		}
		c.add(vd)
		return nil
	}
	if val == nil {
		return fmt.Errorf("an immediate without data")
	}
	return c.load(e.u32(unix.NFTA_IMMEDIATE_DREG), reg{imm: val, size: len(val)})
}

func verdictOf(v *kVerdict) (*Verdict, error) {
	switch v.code {
	case 0:
		return &Verdict{Kind: "drop"}, nil
	case 1:
		return &Verdict{Kind: "accept"}, nil
	case -1:
		return &Verdict{Kind: "continue"}, nil
	case -3:
		return &Verdict{Kind: "jump", Target: v.chain}, nil
	case -4:
		return &Verdict{Kind: "goto", Target: v.chain}, nil
	case -5:
		return &Verdict{Kind: "return"}, nil
	}
	return nil, fmt.Errorf("%w: verdict code %d", ErrNotTranslated, v.code)
}

var cmpOps = map[uint32]string{unix.NFT_CMP_EQ: "==", unix.NFT_CMP_NEQ: "!=", unix.NFT_CMP_LT: "<",
	unix.NFT_CMP_LTE: "<=", unix.NFT_CMP_GT: ">", unix.NFT_CMP_GTE: ">="}

func (c *ruleCtx) cmp(e kExpr) error {
	op, ok := cmpOps[e.u32(unix.NFTA_CMP_OP)]
	if !ok {
		return fmt.Errorf("cmp operator %d", e.u32(unix.NFTA_CMP_OP))
	}
	data := e.data(unix.NFTA_CMP_DATA)
	g, _, err := c.get(e.u32(unix.NFTA_CMP_SREG))
	if err != nil {
		return err
	}
	if g.full != 0 && !g.masked {
		// A prefix a whole number of bytes long.
		g = reg{masked: true, mask: prefixMask(g.size*8, g.full), base: g.expr, baseType: g.typ, full: g.full}
	}
	if g.masked {
		return c.maskedCmp(g, op, data)
	}
	if g.expr == nil || len(data) > max(g.size, 4) {
		return fmt.Errorf("%w: a comparison of a concatenation", ErrNotTranslated)
	}
	right := c.lits.kValue(data, g.typ)
	if right == nil {
		return fmt.Errorf("%w: a %s value of %d bytes", ErrNotTranslated, g.typ, len(data))
	}
	if _, list := right.(*List); list || (g.typ == "ct_state" || g.typ == "ct_status") {
		return fmt.Errorf("%w: an exact comparison of %s", ErrNotTranslated, g.typ)
	}
	if op == "<=" && len(c.stmts) > 0 {
		// >= then <= on one register: nft prints the range.
		if prev, ok := c.stmts[len(c.stmts)-1].(*Match); ok && prev.Op == ">=" && prev.Left == g.expr {
			c.stmts[len(c.stmts)-1] = &Match{Op: "==", Left: g.expr, Right: &Range{Lo: prev.Right, Hi: right}}
			return nil
		}
	}
	c.add(&Match{Op: op, Left: g.expr, Right: right})
	if op == "==" {
		c.dependency(g.expr, right)
	}
	return nil
}

// dependency remembers a match on the layer 4 protocol or the family,
// which nft leaves out when a later header field implies it.
func (c *ruleCtx) dependency(left, right Expr) {
	lit, ok := right.(*Literal)
	if !ok {
		return
	}
	switch l := left.(type) {
	case *Meta:
		switch l.Key {
		case "l4proto":
			c.l4proto, c.l4dep = lit.Text, len(c.stmts)-1
		case "nfproto":
			c.l3proto, c.l3dep = map[string]string{"ipv4": "ip", "ipv6": "ip6"}[lit.Text], len(c.stmts)-1
		}
	case *Payload:
		if l.Field == "protocol" || l.Field == "nexthdr" {
			c.l4proto, c.l4dep = lit.Text, len(c.stmts)-1
		}
	}
}

// maskedCmp is a comparison of a masked value: a flag test (ct state
// new) or an address prefix.
func (c *ruleCtx) maskedCmp(g reg, op string, data []byte) error {
	zero := bytes.Count(data, []byte{0}) == len(data)
	switch g.baseType {
	case "ct_state", "ct_status":
		if op == "!=" && zero {
			f := c.lits.kValue(g.mask, g.baseType)
			if f == nil {
				return fmt.Errorf("%w: %s flags %x", ErrNotTranslated, g.baseType, g.mask)
			}
			c.add(&Match{Op: "in", Left: g.base, Right: f})
			return nil
		}
	case "ipv4_addr", "ipv6_addr":
		if n, ok := prefixLen(g.mask); ok && (op == "==" || op == "!=") && len(data) <= typeSize(g.baseType) {
			addr := make([]byte, typeSize(g.baseType))
			copy(addr, data)
			var right Expr = &Prefix{Addr: c.lits.kValue(addr, g.baseType), Len: n}
			if n == len(addr)*8 {
				right = c.lits.kValue(addr, g.baseType)
			}
			c.add(&Match{Op: op, Left: g.base, Right: right})
			return nil
		}
	}
	return fmt.Errorf("%w: a masked comparison of %s", ErrNotTranslated, g.baseType)
}

// prefixMask is the mask of a prefix of n bits, size bytes long.
func prefixMask(n, size int) []byte {
	m := make([]byte, size)
	for i := range m {
		switch {
		case n >= 8:
			m[i] = 0xff
			n -= 8
		case n > 0:
			m[i] = byte(0xff << (8 - n))
			n = 0
		}
	}
	return m
}

// prefixLen is the length of a network mask, if mask is one.
func prefixLen(mask []byte) (int, bool) {
	n, ended := 0, false
	for _, b := range mask {
		if ended && b != 0 {
			return 0, false
		}
		ones := bits.LeadingZeros8(^b)
		if b != 0xff {
			if b<<ones != 0 {
				return 0, false
			}
			ended = true
		}
		n += ones
	}
	return n, true
}

func (c *ruleCtx) bitwise(e kExpr) error {
	if e.has(nftaBitwiseOp) && e.u32(nftaBitwiseOp) != nftBitwiseBool {
		return fmt.Errorf("%w: a bitwise shift", ErrNotTranslated)
	}
	g, _, err := c.get(e.u32(unix.NFTA_BITWISE_SREG))
	if err != nil {
		return err
	}
	if g.expr == nil || g.masked {
		return fmt.Errorf("%w: a bitwise operation on %s", ErrNotTranslated, "a computed value")
	}
	mask, xor := e.data(unix.NFTA_BITWISE_MASK), e.data(unix.NFTA_BITWISE_XOR)
	allZero := func(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }
	allOnes := func(b []byte) bool { return bytes.Count(b, []byte{0xff}) == len(b) }
	out := reg{typ: g.typ, size: g.size, full: g.full}
	switch {
	case allZero(xor) && (g.typ == "ct_state" || g.typ == "ct_status" || g.typ == "ipv4_addr" || g.typ == "ipv6_addr"):
		out.masked, out.mask, out.base, out.baseType = true, mask, g.expr, g.typ
	case g.typ == "mark":
		m, ok1 := kValueInt(mask, "mark")
		x, ok2 := kValueInt(xor, "mark")
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: a mark mask of %d bytes", ErrNotTranslated, len(mask))
		}
		lit := func(v uint64) Expr { return c.lits.lit(fmt.Sprint(v), true) }
		switch {
		case x == 0:
			out.expr = &Binop{Op: "&", Left: g.expr, Right: lit(m)}
		case allOnes(mask):
			out.expr = &Binop{Op: "^", Left: g.expr, Right: lit(x)}
		case m&x == 0 && uint32(m|x) == 0xffffffff:
			out.expr = &Binop{Op: "|", Left: g.expr, Right: lit(x)}
		default:
			out.expr = &Binop{Op: "^", Left: &Binop{Op: "&", Left: g.expr, Right: lit(m)}, Right: lit(x)}
		}
	default:
		return fmt.Errorf("%w: a bitwise operation on %s", ErrNotTranslated, g.typ)
	}
	return c.load(e.u32(unix.NFTA_BITWISE_DREG), out)
}

func (c *ruleCtx) rangeExpr(e kExpr) error {
	op := map[uint32]string{unix.NFT_RANGE_EQ: "==", unix.NFT_RANGE_NEQ: "!="}[e.u32(unix.NFTA_RANGE_OP)]
	g, _, err := c.get(e.u32(unix.NFTA_RANGE_SREG))
	if err != nil || g.expr == nil || op == "" {
		return fmt.Errorf("%w: a range", ErrNotTranslated)
	}
	lo, hi := c.lits.kValue(e.data(unix.NFTA_RANGE_FROM_DATA), g.typ), c.lits.kValue(e.data(unix.NFTA_RANGE_TO_DATA), g.typ)
	if lo == nil || hi == nil {
		return fmt.Errorf("%w: a range of %s", ErrNotTranslated, g.typ)
	}
	c.add(&Match{Op: op, Left: g.expr, Right: &Range{Lo: lo, Hi: hi}})
	return nil
}
