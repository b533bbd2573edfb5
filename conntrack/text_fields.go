package conntrack

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// lineTuple collects one direction while a line is parsed.
type lineTuple struct {
	t                Tuple
	src, dst         bool
	sport, dport     bool
	typ, code, id    bool
	icmp             ICMP
	packets, bytes   bool
	nPackets, nBytes uint64
}

// set stores k=v in the tuple when it belongs there and reports whether it
// did; tuple keys seen twice close the tuple.
func (lt *lineTuple) set(k, v string, proto uint8) (bool, error) {
	var flag *bool
	switch k {
	case "src", "dst":
		flag = &lt.src
		if k == "dst" {
			flag = &lt.dst
		}
		if *flag {
			return false, fmt.Errorf("%s= twice in a tuple", k)
		}
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return false, fmt.Errorf("bad address %s=%q", k, v)
		}
		*flag = true
		if k == "src" {
			lt.t.Src = a
		} else {
			lt.t.Dst = a
		}
		return true, nil
	case "sport", "dport":
		if !hasPorts(proto) {
			return false, nil
		}
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return false, fmt.Errorf("bad port %s=%q", k, v)
		}
		if k == "sport" {
			lt.t.SrcPort, flag = uint16(n), &lt.sport
		} else {
			lt.t.DstPort, flag = uint16(n), &lt.dport
		}
	case "type", "code", "id":
		if !isICMP(proto) || *lt.icmpFlag(k) {
			return false, nil
		}
		bits := 8
		if k == "id" {
			bits = 16
		}
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			return false, fmt.Errorf("bad icmp %s=%q", k, v)
		}
		switch k {
		case "type":
			lt.icmp.Type = uint8(n)
		case "code":
			lt.icmp.Code = uint8(n)
		default:
			lt.icmp.ID = uint16(n)
		}
		flag = lt.icmpFlag(k)
	case "packets", "bytes":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return false, fmt.Errorf("bad counter %s=%q", k, v)
		}
		if k == "packets" {
			lt.nPackets, flag = n, &lt.packets
		} else {
			lt.nBytes, flag = n, &lt.bytes
		}
	default:
		return false, nil
	}
	if *flag {
		return false, fmt.Errorf("%s= twice in a tuple", k)
	}
	*flag = true
	return true, nil
}

func (lt *lineTuple) icmpFlag(k string) *bool {
	switch k {
	case "type":
		return &lt.typ
	case "code":
		return &lt.code
	}
	return &lt.id
}

// setField stores an entry-level key=value; unknown keys are ignored.
func setField(e *Entry, seen *fieldSet, k, v string) error {
	var bit fieldSet
	bits := 32
	switch k {
	case "mark":
		bit = seenMark
	case "use":
		bit = seenUse
	case "id":
		bit = seenID
	case "zone":
		bit, bits = seenZone, 16
	case "packets", "bytes", "sport", "dport", "dst", "type", "code":
		return fmt.Errorf("%s= outside a tuple or twice in one", k)
	default:
		return nil
	}
	if *seen&bit != 0 {
		return fmt.Errorf("%s= twice", k)
	}
	*seen |= bit
	n, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		return fmt.Errorf("bad %s=%q", k, v)
	}
	switch bit {
	case seenMark:
		e.Mark = uint32(n)
	case seenID:
		e.ID = uint32(n)
	case seenZone:
		e.Zone = uint16(n)
	}
	return nil
}

// lexer splits a line into space-separated tokens; a token starting with
// '[' runs to the next ']' and may contain spaces ([start=Sat Nov ...]).
type lexer struct {
	s   string
	pos int
}

func (lx *lexer) next() (string, error) {
	s := lx.s
	for lx.pos < len(s) && (s[lx.pos] == ' ' || s[lx.pos] == '\t') {
		lx.pos++
	}
	if lx.pos >= len(s) {
		return "", io.EOF
	}
	start := lx.pos
	if s[start] == '[' {
		end := strings.IndexByte(s[start:], ']')
		tok := s[start : start+max(end+1, 0)]
		// Only [key=value with spaces] may hold spaces, and no '['.
		sp := strings.IndexAny(tok, " \t")
		if end < 0 || strings.Count(tok, "[") > 1 || sp >= 0 && !strings.Contains(tok[:sp], "=") {
			return "", fmt.Errorf("unterminated %q (truncated?)", clip(s[start:]))
		}
		lx.pos = start + end + 1
		return tok, nil
	}
	for lx.pos < len(s) && s[lx.pos] != ' ' && s[lx.pos] != '\t' {
		lx.pos++
	}
	return s[start:lx.pos], nil
}
