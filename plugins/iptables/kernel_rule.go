package iptables

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
)

// appendRule appends the rule as iptables-save prints it: "-A chain", the
// entry's addresses, interfaces, protocol and fragment flag, its matches,
// its target.
func appendRule(b []byte, fam *xtFamily, chain string, x xtEntry, jumps jumpTargets, names names) ([]byte, error) {
	e := x.e
	inv := e[fam.invflags]
	b = append(b, "-A "...)
	b = append(b, chain...)
	b = appendAddr(b, fam, 's', e[0:], e[2*fam.addrLen:], inv&invSrcIP != 0)
	b = appendAddr(b, fam, 'd', e[fam.addrLen:], e[3*fam.addrLen:], inv&invDstIP != 0)
	b = appendIface(b, 'i', e[fam.iniface:fam.iniface+16], inv&invViaIn != 0)
	b = appendIface(b, 'o', e[fam.iniface+16:fam.iniface+32], inv&invViaOut != 0)
	if p := ne.Uint16(e[fam.proto:]); p > 0 {
		if inv&invProto != 0 {
			b = append(b, " !"...)
		}
		name, ok := protoNames[p]
		if !ok {
			return nil, fmt.Errorf("protocol %d: %w", p, ErrNotTranslated)
		}
		b = append(b, " -p "...)
		b = append(b, name...)
	}
	if fam.fragFlag != 0 && e[fam.flags]&fam.fragFlag != 0 {
		if inv&invFrag != 0 {
			b = append(b, " !"...)
		}
		b = append(b, " -f"...)
	}
	tOff := ne.Uint16(e[fam.targetOffset:])
	for m := e[fam.entrySize:tOff]; len(m) > 0; {
		size := int(ne.Uint16(m))
		if size < 32 || size > len(m) {
			return nil, fmt.Errorf("a match's size %d is wrong", size)
		}
		var err error
		if b, err = appendMatch(b, fam, names.of(m[2:31]), m[31], m[32:size]); err != nil {
			return nil, err
		}
		m = m[size:]
	}
	name := names.of(x.target[2:31])
	switch name {
	case "":
		v := int32(ne.Uint32(x.target[32:]))
		if v >= 0 {
			if uint32(v) == x.off+uint32(len(e)) {
				break // falls through to the next rule: no target
			}
			c, ok := jumps.at(uint32(v))
			if !ok {
				return nil, fmt.Errorf("a jump to offset %d, in no user chain", v)
			}
			b = appendJump(b, fam, e, c)
			break
		}
		verdict, err := standardVerdict(x)
		if err != nil {
			return nil, err
		}
		b = appendJump(b, fam, e, verdict)
	case "ERROR":
		return nil, fmt.Errorf("an ERROR target inside a chain")
	default:
		b = append(b, " -j "...)
		b = append(b, name...)
		var err error
		if b, err = appendTarget(b, fam, name, x.target[31], x.target[32:]); err != nil {
			return nil, err
		}
	}
	return append(b, '\n'), nil
}

// appendJump appends a jump, or a goto where the entry says so.
func appendJump(b []byte, fam *xtFamily, e []byte, chain string) []byte {
	if e[fam.flags]&fam.gotoFlag != 0 {
		b = append(b, " -g "...)
	} else {
		b = append(b, " -j "...)
	}
	return append(b, chain...)
}

// protoNames are the protocols iptables-save prints by name.
var protoNames = map[uint16]string{6: "tcp", 132: "sctp", 17: "udp", 136: "udplite", 1: "icmp",
	58: "ipv6-icmp", 50: "esp", 51: "ah", 135: "mobility-header", 33: "dccp", 108: "ipcomp"}

// appendAddr appends "-s addr/mask" (or -d), as iptables-save: nothing
// for any address, the mask as a length where it is a prefix.
func appendAddr(b []byte, fam *xtFamily, letter byte, addr, mask []byte, invert bool) []byte {
	a, _ := netip.AddrFromSlice(addr[:fam.addrLen])
	m, _ := netip.AddrFromSlice(mask[:fam.addrLen])
	bits := prefixLen(mask[:fam.addrLen])
	if fam.addrLen == 4 {
		if m.IsUnspecified() && a.IsUnspecified() && !invert {
			return b
		}
	} else if bits == 0 && !invert {
		return b
	}
	if invert {
		b = append(b, " !"...)
	}
	b = append(b, " -"...)
	b = append(b, letter, ' ')
	b = a.AppendTo(b)
	b = append(b, '/')
	if bits < 0 {
		return m.AppendTo(b)
	}
	return strconv.AppendInt(b, int64(bits), 10)
}

// prefixLen is the length of the prefix a mask is, or -1.
func prefixLen(mask []byte) int {
	n := 0
	for i, c := range mask {
		if c == 0xff {
			n += 8
			continue
		}
		ones := 0
		for c&0x80 != 0 {
			ones++
			c <<= 1
		}
		if c != 0 {
			return -1
		}
		for _, r := range mask[i+1:] {
			if r != 0 {
				return -1
			}
		}
		return n + ones
	}
	return n
}

// appendIface appends "-i name" (or -o), the NUL-terminated name at the
// start of field: nothing for any interface ("+").
func appendIface(b []byte, letter byte, field []byte, invert bool) []byte {
	name := field
	if i := bytes.IndexByte(field, 0); i >= 0 {
		name = field[:i]
	}
	if len(name) == 0 || (string(name) == "+" && !invert) {
		return b
	}
	if invert {
		b = append(b, " !"...)
	}
	b = append(b, " -"...)
	b = append(b, letter, ' ')
	return append(b, name...)
}

// names are the extensions' names met in a table, made strings once.
type names map[string]string

// of is the NUL-terminated name at the start of b.
func (n names) of(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	n[s] = s
	return s
}

// cString is the NUL-terminated string at the start of b.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
