package nftables

import (
	"fmt"
	"strconv"
)

// Values of known expressions are read at parse time, so that one the walk
// could not read (an address of 300, a port "8o") is an error naming its
// position instead of a comparison that silently never matches.

// fieldType is the nft type of a packet field whose values are checked, ""
// for others.
func fieldType(e Expr) string {
	switch x := e.(type) {
	case *Payload:
		switch {
		case x.Field == "saddr" || x.Field == "daddr":
			switch x.Protocol {
			case "ip":
				return "ipv4_addr"
			case "ip6":
				return "ipv6_addr"
			}
		case x.Field == "sport" || x.Field == "dport":
			switch x.Protocol {
			case "th", "tcp", "udp", "udplite", "sctp", "dccp":
				return "inet_service"
			}
		case x.Protocol == "ip" && x.Field == "protocol", x.Protocol == "ip6" && x.Field == "nexthdr":
			return "inet_proto"
		}
	case *Meta:
		if x.Key == "l4proto" {
			return "inet_proto"
		}
	}
	return ""
}

// fieldTypes is fieldType for each part of a concatenation.
func fieldTypes(e Expr) []string {
	if c, ok := e.(*Concat); ok {
		out := make([]string, len(c.Parts))
		for i, p := range c.Parts {
			out[i] = fieldType(p)
		}
		return out
	}
	return []string{fieldType(e)}
}

// checkTyped checks the literals of e (a literal, prefix, range, set,
// concatenation) against types; path names e in errors.
func checkTyped(e Expr, types []string, path string) error {
	switch x := e.(type) {
	// A part's path is made only for its error: checking again with it
	// gives the same error, named.
	case *AnonSet:
		for i, el := range x.Elems {
			if checkTyped(el.Key, types, "") != nil {
				return checkTyped(el.Key, types, fmt.Sprintf("%s.set[%d]", path, i))
			}
		}
		return nil
	case *List:
		for i, it := range x.Items {
			if checkTyped(it, types, "") != nil {
				return checkTyped(it, types, fmt.Sprintf("%s[%d]", path, i))
			}
		}
		return nil
	case *Concat:
		if len(x.Parts) != len(types) {
			return nil // a mismatch the walk reports; nothing typed to read
		}
		for i, p := range x.Parts {
			if checkAtom(p, types[i], "") != nil {
				return checkAtom(p, types[i], fmt.Sprintf("%s.concat[%d]", path, i))
			}
		}
		return nil
	}
	if len(types) != 1 {
		return nil
	}
	return checkAtom(e, types[0], path)
}

// checkAtom checks one literal, prefix or range against an nft type.
func checkAtom(e Expr, typ, path string) error {
	if typ == "" {
		return nil
	}
	switch x := e.(type) {
	case *Literal:
		if msg := literalProblem(x, typ); msg != "" {
			return fmt.Errorf("%s: %q %s", path, x.Text, msg)
		}
	case *Prefix:
		if typ != "ipv4_addr" && typ != "ipv6_addr" {
			return nil
		}
		if err := checkAtom(x.Addr, typ, path+".prefix.addr"); err != nil {
			return err
		}
		bits := 32
		if typ == "ipv6_addr" {
			bits = 128
		}
		if x.Len < 0 || x.Len > bits {
			return fmt.Errorf("%s.prefix.len: %d is not a prefix length from 0 to %d", path, x.Len, bits)
		}
	case *Range:
		if err := checkAtom(x.Lo, typ, path+".range[0]"); err != nil {
			return err
		}
		return checkAtom(x.Hi, typ, path+".range[1]")
	}
	return nil
}

// literalProblem says why a literal is not a value of typ, or "".
func literalProblem(l *Literal, typ string) string {
	switch typ {
	case "ipv4_addr", "ipv6_addr":
		a, ok := litAddr(l)
		switch {
		case !ok:
			return "is not an IP address"
		case typ == "ipv4_addr" && !a.Is4():
			return "is not an IPv4 address"
		case typ == "ipv6_addr" && !a.Is6():
			return "is not an IPv6 address"
		}
	case "inet_service":
		if n, ok := litInt(l.Text); !ok || n > 65535 {
			return "is not a port (0 to 65535)"
		}
	case "inet_proto":
		if n, ok := litInt(l.Text); !ok || n > 255 {
			return "is not a protocol (a name or 0 to 255)"
		}
	}
	return ""
}

// checkStmt reads the values of a statement the walk evaluates: the right
// side of a match on an address, port or protocol, the address and port
// of a NAT statement. fam is the table's family.
func checkStmt(st Stmt, path, fam string) error {
	switch x := st.(type) {
	case *Match:
		return checkTyped(x.Right, fieldTypes(x.Left), path+".match.right")
	case *VMap:
		if as, ok := x.Data.(*AnonSet); ok {
			return checkTyped(as, fieldTypes(x.Key), path+".vmap.data")
		}
	case *NAT:
		return checkNAT(x, path+"."+x.Kind, fam)
	}
	return nil
}

func checkNAT(n *NAT, path, fam string) error {
	addrType := ""
	switch {
	case n.Family == "ip" || n.Family == "" && fam == "ip":
		addrType = "ipv4_addr"
	case n.Family == "ip6" || n.Family == "" && fam == "ip6":
		addrType = "ipv6_addr"
	}
	if n.Port != nil {
		if err := checkAtom(n.Port, "inet_service", path+".port"); err != nil {
			return err
		}
	}
	switch a := n.Addr.(type) {
	case *Literal:
		if addrType == "" {
			if _, ok := litAddr(a); !ok {
				return fmt.Errorf("%s.addr: %q is not an IP address", path, a.Text)
			}
			return nil
		}
		return checkAtom(a, addrType, path+".addr")
	case *Range:
		return checkAtom(a, addrType, path+".addr")
	case *MapLookup:
		as, ok := a.Data.(*AnonSet)
		if !ok || addrType == "" {
			return nil
		}
		keyTypes := fieldTypes(a.Key)
		for i, el := range as.Elems {
			ep := path + ".addr.map.data.set" + "[" + strconv.Itoa(i) + "]"
			if err := checkTyped(el.Key, keyTypes, ep+"[0]"); err != nil {
				return err
			}
			if err := checkTyped(el.Data, natDataTypes(el.Data, addrType), ep+"[1]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// natDataTypes are the types of a NAT map's data: an address, or an
// address and a port.
func natDataTypes(d Expr, addrType string) []string {
	if c, ok := d.(*Concat); ok && len(c.Parts) == 2 {
		return []string{addrType, "inet_service"}
	}
	return []string{addrType}
}

// checkElements reads the elements of a named set or map with the types
// it declares.
func checkElements(s *Set, path string) error {
	for i, el := range s.Elements {
		// The path is made only for an error (checking is pure).
		if checkElement(s, el, "") != nil {
			return checkElement(s, el, fmt.Sprintf("%s.elem[%d]", path, i))
		}
	}
	return nil
}

// checkElement checks one element; ep is its path.
func checkElement(s *Set, el *Element, ep string) error {
	kp := ep
	if el.Data != nil {
		kp += "[0]"
	}
	if err := checkTyped(el.Key, s.KeyType, kp); err != nil {
		return fmt.Errorf("%s %s: %w", kindName(s.IsMap), s.Name, err)
	}
	if el.Data != nil && len(s.DataType) > 0 && s.DataType[0] != "verdict" {
		if err := checkTyped(el.Data, s.DataType, ep+"[1]"); err != nil {
			return fmt.Errorf("%s %s: %w", kindName(s.IsMap), s.Name, err)
		}
	}
	return nil
}
