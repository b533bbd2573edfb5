package nftables

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// alt is one value an expression can take, with its probability (numgen
// and hashes give several) and the elements looked up to get it.
type alt struct {
	v    value
	p    float64
	hits []hit
}

func one(v value) []alt { return []alt{{v: v, p: 1}} }

// singleValued reports whether e always has one value, of probability 1,
// looked up in no set: a field of the packet or the connection, a literal,
// or a concatenation or an operation of those. Such an expression is
// evaluated by evalSingle, without a slice of alternatives.
func singleValued(e Expr) bool {
	switch x := e.(type) {
	case *Payload, *Meta, *CT, *Fib, *Literal:
		return true
	case *Concat:
		for _, part := range x.Parts {
			if !singleValued(part) {
				return false
			}
		}
		return true
	case *Binop:
		return singleValued(x.Left) && singleValued(x.Right)
	}
	return false
}

// evalSingle is eval's one alternative's value for a singleValued e.
func (k *walk) evalSingle(s *state, t *Table, e Expr) value {
	switch x := e.(type) {
	case *Payload:
		return k.payload(s, x)
	case *Meta:
		return k.meta(s, x)
	case *CT:
		return k.ct(s, x)
	case *Fib:
		return k.fib(s, x)
	case *Literal:
		return dataValue(x)
	case *Concat:
		return k.concatSingle(s, t, x, make([]value, 0, len(x.Parts)))
	case *Binop:
		return binop(x.Op, k.evalSingle(s, t, x.Left), k.evalSingle(s, t, x.Right))
	}
	return unknownValue(e.String() + " not evaluated")
}

// concatSingle is a singleValued concatenation, its parts appended to
// parts. As eval: the last part that is unknown or absent decides.
func (k *walk) concatSingle(s *state, t *Table, x *Concat, parts []value) value {
	v := value{kind: vConcat, parts: parts}
	for _, part := range x.Parts {
		switch b := k.evalSingle(s, t, part); {
		case b.kind == vUnknown || b.kind == vNone:
			v = b
		case v.kind == vConcat:
			v.parts = append(v.parts, b)
		}
	}
	return v
}

// evalKey is evalSingle for a value its caller reads and drops before it
// evaluates another (a match's left side, a verdict map's key, a mangle's
// value): a concatenation's parts go in the walk's scratch slice, which
// the next evalKey reuses, instead of a slice of their own. A walk
// evaluates kube-proxy's address . protocol . port keys at every check.
func (k *walk) evalKey(s *state, t *Table, e Expr) value {
	x, ok := e.(*Concat)
	if !ok {
		return k.evalSingle(s, t, e)
	}
	v := k.concatSingle(s, t, x, k.scratch[:0])
	if v.kind == vConcat && cap(v.parts) > cap(k.scratch) {
		k.scratch = v.parts[:0] // grown
	}
	return v
}

// eval computes an expression on the packet of a branch.
func (k *walk) eval(s *state, t *Table, e Expr) []alt {
	switch x := e.(type) {
	case *Payload:
		return one(k.payload(s, x))
	case *Meta:
		return one(k.meta(s, x))
	case *CT:
		return one(k.ct(s, x))
	case *Fib:
		return one(k.fib(s, x))
	case *Literal:
		return one(dataValue(x))
	case *Numgen:
		if x.Mode != "random" {
			s.note("numgen %s taken as uniform over new connections", x.Mode)
		}
		return k.w.uniform(x.Mod, x.Offset)
	case *Hash:
		s.note("%s: a hash of the packet, taken as uniform over clients", x)
		return k.w.uniform(x.Mod, x.Offset)
	case *Concat:
		// Each part is evaluated once (an evaluation has no effect but
		// its notes, which are kept once). While every part has one
		// value, the concatenation is built in place.
		out := []alt{{v: value{kind: vConcat, parts: make([]value, 0, len(x.Parts))}, p: 1}}
		for _, part := range x.Parts {
			if len(out) == 1 && singleValued(part) {
				// One value, of probability 1, no hits: no slice.
				a, b := &out[0], k.evalSingle(s, t, part)
				switch {
				case b.kind == vUnknown || b.kind == vNone:
					a.v = b
				case a.v.kind == vConcat:
					a.v.parts = append(a.v.parts, b)
				}
				continue
			}
			right := k.eval(s, t, part)
			if len(out) == 1 && len(right) == 1 {
				a, b := &out[0], right[0]
				switch {
				case b.v.kind == vUnknown || b.v.kind == vNone:
					a.v = b.v // as concatValue: the last such part decides
				case a.v.kind == vConcat:
					a.v.parts = append(a.v.parts, b.v) // parts made here, not shared
				}
				a.p *= b.p
				if len(b.hits) > 0 {
					a.hits = append(slices.Clip(a.hits), b.hits...)
				}
				continue
			}
			out = pairs(s, x, out, func() []alt { return right }, concatValue)
		}
		return out
	case *Binop:
		return pairs(s, x, k.eval(s, t, x.Left), func() []alt { return k.eval(s, t, x.Right) },
			func(a, b value) value { return binop(x.Op, a, b) })
	case *MapLookup:
		var keys []alt
		var single [1]alt
		if singleValued(x.Key) {
			single[0] = alt{v: k.evalSingle(s, t, x.Key), p: 1}
			keys = single[:]
		} else {
			keys = k.eval(s, t, x.Key)
		}
		out := make([]alt, 0, len(keys))
		// The alternatives of a numgen key have no hits of their own:
		// theirs are carved out of one array.
		var hits []hit
		for _, a := range keys {
			if a.v.kind == vUnknown || a.v.kind == vNone {
				out = append(out, a)
				continue
			}
			h := k.lookupIn(s, t, x.Data, a.v)
			if h == nil || h.el == nil || h.el.Data == nil {
				out = append(out, alt{v: none(), p: a.p, hits: a.hits})
				continue
			}
			if len(a.hits) > 0 {
				out = append(out, alt{v: h.el.dataValue(), p: a.p, hits: append(slices.Clip(a.hits), *h)})
				continue
			}
			if hits == nil {
				hits = make([]hit, 0, len(keys))
			}
			hits = append(hits, *h)
			out = append(out, alt{v: h.el.dataValue(), p: a.p, hits: hits[len(hits)-1 : len(hits) : len(hits)]})
		}
		return out
	case *Unknown:
		return one(unknownValue(x.Name + " not understood"))
	}
	return one(unknownValue(e.String() + " not evaluated"))
}

// pairs combines every alternative of left with every one right gives
// (evaluated anew for each, as the walk always has) through f: their
// probabilities multiply and the elements they looked up add up. Past
// maxBranches alternatives of x the rest are dropped, with a note.
func pairs(s *state, x Expr, left []alt, right func() []alt, f func(a, b value) value) []alt {
	var out []alt
	for _, a := range left {
		for _, b := range right() {
			if len(out) == maxBranches {
				s.note("more than %d alternatives of %s: only the first were followed", maxBranches, x)
				break
			}
			out = append(out, alt{v: f(a.v, b.v), p: a.p * b.p, hits: append(slices.Clip(a.hits), b.hits...)})
		}
	}
	return out
}

// concatValue appends the part b to the concatenation a; an unknown or
// absent part makes the whole so.
func concatValue(a, b value) value {
	if b.kind == vUnknown || b.kind == vNone {
		return b
	}
	a.parts = append(slices.Clip(a.parts), b)
	return a
}

// uniform is uniform(n, off), kept: the slice is shared, and read only.
func (w *walker) uniform(n, off int) []alt {
	if a, ok := w.uniforms.Load([2]int{n, off}); ok {
		return a.([]alt)
	}
	a := slices.Clip(uniform(n, off))
	w.uniforms.Store([2]int{n, off}, a)
	return a
}

func uniform(n, off int) []alt {
	out := make([]alt, n)
	for i := range out {
		out[i] = alt{v: value{kind: vInt, n: uint64(off + i)}, p: 1 / float64(n)}
	}
	return out
}

func binop(op string, a, b value) value {
	if a.kind != vInt || b.kind != vInt {
		if a.kind == vUnknown || a.kind == vNone {
			return a
		}
		return unknownValue("operator " + op + " on " + a.String() + " and " + b.String())
	}
	v := value{kind: vInt}
	switch op {
	case "&":
		v.n = a.n & b.n
	case "|":
		v.n = a.n | b.n
	case "^":
		v.n = a.n ^ b.n
	case "<<":
		v.n = a.n << (b.n & 63)
	case ">>":
		v.n = a.n >> (b.n & 63)
	}
	return v
}

func (k *walk) payload(s *state, x *Payload) value {
	p := s.pkt
	switch x.Protocol {
	case "ip", "ip6":
		if p.Dst.Is4() != (x.Protocol == "ip") {
			return none() // nft adds an implicit family check
		}
		switch x.Field {
		case "saddr":
			return value{kind: vAddr, addr: p.Src}
		case "daddr":
			return value{kind: vAddr, addr: p.Dst}
		case "protocol", "nexthdr":
			return l4proto(p.Protocol)
		case "version":
			if p.Dst.Is4() {
				return value{kind: vInt, n: 4}
			}
			return value{kind: vInt, n: 6}
		}
	case "th", "tcp", "udp", "sctp", "udplite", "dccp":
		if x.Protocol != "th" && x.Protocol != p.Protocol {
			return none()
		}
		if x.Protocol == "th" && p.Protocol != "tcp" && p.Protocol != "udp" && p.Protocol != "sctp" {
			return unknownValue("th " + x.Field + " of a " + p.Protocol + " packet")
		}
		switch x.Field {
		case "dport":
			return value{kind: vInt, n: uint64(p.DstPort)}
		case "sport":
			return value{kind: vInt, n: uint64(p.SrcPort)}
		case "flags":
			if p.Protocol == "tcp" {
				return value{kind: vInt, n: 0x02} // a first packet is a SYN
			}
		}
	}
	return unknownValue("payload " + x.String() + " not evaluated")
}

func l4proto(name string) value {
	if n, ok := protoNum(name); ok {
		return value{kind: vInt, n: n}
	}
	return unknownValue("protocol " + name + " unknown")
}

func (k *walk) meta(s *state, x *Meta) value {
	p := s.pkt
	switch x.Key {
	case "l4proto":
		return l4proto(p.Protocol)
	case "nfproto":
		if p.Dst.Is4() {
			return value{kind: vInt, n: 2}
		}
		return value{kind: vInt, n: 10}
	case "protocol":
		if p.Dst.Is4() {
			return value{kind: vInt, n: 0x0800}
		}
		return value{kind: vInt, n: 0x86dd}
	case "mark":
		return value{kind: vInt, n: uint64(s.mark)}
	case "iifname":
		if p.Entry == dataplane.Output && s.hook != "input" {
			return none() // a locally sent packet has no input interface
		}
		if p.InIface == "" {
			s.note("iifname not evaluated (input interface unknown): taken as an interface no rule names")
		}
		return value{kind: vStr, s: p.InIface}
	case "oifname":
		if s.hook == "prerouting" {
			return none() // no output interface before routing
		}
		s.note("oifname not evaluated (output interface unknown): taken as an interface no rule names")
		return value{kind: vStr}
	}
	return unknownValue("meta " + x.Key + " not evaluated")
}

func (k *walk) ct(s *state, x *CT) value {
	switch x.Key {
	case "state":
		if s.untracked {
			return value{kind: vFlags, s: "untracked"}
		}
		return value{kind: vFlags, s: "new"}
	case "status":
		switch {
		case s.dnatted && s.snatted:
			return value{kind: vFlags, s: "dnat,snat"}
		case s.dnatted:
			return value{kind: vFlags, s: "dnat"}
		case s.snatted:
			return value{kind: vFlags, s: "snat"}
		}
		return value{kind: vFlags}
	case "mark":
		return value{kind: vInt}
	case "direction":
		return value{kind: vStr, s: "original"}
	}
	if x.Dir != "original" {
		return unknownValue(x.String() + " not evaluated")
	}
	o := s.orig
	switch strings.TrimPrefix(strings.TrimPrefix(x.Key, "ip6 "), "ip ") {
	case "saddr":
		return value{kind: vAddr, addr: o.Src}
	case "daddr":
		return value{kind: vAddr, addr: o.Dst}
	case "proto-src":
		return value{kind: vInt, n: uint64(o.SrcPort)}
	case "proto-dst":
		return value{kind: vInt, n: uint64(o.DstPort)}
	case "protocol":
		return l4proto(o.Protocol)
	}
	return unknownValue(x.String() + " not evaluated")
}

func (k *walk) fib(s *state, x *Fib) value {
	if x.Result != "type" {
		return unknownValue(x.String() + " not evaluated (routes unknown)")
	}
	var a netip.Addr
	switch {
	case hasFlag(x.Flags, "daddr"):
		a = s.pkt.Dst
	case hasFlag(x.Flags, "saddr"):
		a = s.pkt.Src
	default:
		return unknownValue(x.String() + " not evaluated")
	}
	switch {
	case k.w.env.IsLocal(a):
		return value{kind: vStr, s: "local"}
	case a.IsMulticast():
		return value{kind: vStr, s: "multicast"}
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return value{kind: vStr, s: "broadcast"}
	}
	return value{kind: vStr, s: "unicast"}
}
