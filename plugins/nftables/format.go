package nftables

import (
	"fmt"
	"strconv"
	"strings"
)

// Text formats the rule as one line of nft syntax.
func (r *Rule) Text() string {
	parts := make([]string, 0, len(r.Stmts)+1)
	for _, s := range r.Stmts {
		parts = append(parts, s.String())
	}
	if r.Comment != "" {
		parts = append(parts, "comment "+strconv.Quote(r.Comment))
	}
	return strings.Join(parts, " ")
}

func (e *Literal) String() string { return e.Text }

func (e *Payload) String() string {
	if e.Protocol == "" {
		return fmt.Sprintf("@%s,%d,%d", e.Base, e.Offset, e.Len)
	}
	return e.Protocol + " " + e.Field
}

func (e *Meta) String() string {
	switch e.Key {
	case "iifname", "oifname", "iif", "oif":
		return e.Key
	}
	return "meta " + e.Key
}

func (e *CT) String() string {
	parts := []string{"ct"}
	for _, p := range []string{e.Dir, e.Family, e.Key} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

func (e *Fib) String() string {
	return "fib " + strings.Join(e.Flags, " . ") + " " + e.Result
}

func (e *Numgen) String() string {
	s := fmt.Sprintf("numgen %s mod %d", e.Mode, e.Mod)
	if e.Offset != 0 {
		s += fmt.Sprintf(" offset %d", e.Offset)
	}
	return s
}

func (e *Hash) String() string {
	s := e.Kind
	if e.Expr != nil {
		s += " " + e.Expr.String()
	}
	s += fmt.Sprintf(" mod %d", e.Mod)
	if e.Offset != 0 {
		s += fmt.Sprintf(" offset %d", e.Offset)
	}
	return s
}

func (e *Concat) String() string { return joinExprs(e.Parts, " . ") }

func (e *Prefix) String() string { return fmt.Sprintf("%s/%d", e.Addr, e.Len) }

func (e *Range) String() string { return e.Lo.String() + "-" + e.Hi.String() }

func (e *SetRef) String() string { return "@" + e.Name }

func (e *AnonSet) String() string {
	parts := make([]string, 0, len(e.Elems))
	for _, el := range e.Elems {
		parts = append(parts, el.String())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func (e *List) String() string { return joinExprs(e.Items, ",") }

func (e *Binop) String() string {
	return e.Left.String() + " " + e.Op + " " + operand(e.Left, e.Right)
}

func (e *MapLookup) String() string { return e.Key.String() + " map " + e.Data.String() }

func (e *Verdict) String() string {
	if e.Target != "" {
		return e.Kind + " " + e.Target
	}
	return e.Kind
}

func (e *Unknown) String() string { return "(not understood: " + e.Raw + ")" }

func (e *Match) String() string {
	op := e.Op
	_, bitwise := e.Left.(*Binop)
	if op == "in" || op == "==" && !bitwise {
		// nft prints "==" only after a bitwise expression, where it is
		// needed to read the rule back.
		return e.Left.String() + " " + operand(e.Left, e.Right)
	}
	return e.Left.String() + " " + op + " " + operand(e.Left, e.Right)
}

func (e *VMap) String() string { return e.Key.String() + " vmap " + e.Data.String() }

func (e *Mangle) String() string {
	return e.Key.String() + " set " + operand(e.Key, e.Value)
}

func (e *NAT) String() string {
	s := e.Kind
	if e.Family != "" {
		s += " " + e.Family
	}
	switch {
	case e.Addr != nil && e.Port != nil:
		s += " to " + e.Addr.String() + ":" + e.Port.String()
	case e.Addr != nil:
		s += " to " + e.Addr.String()
	case e.Port != nil:
		s += " to :" + e.Port.String()
	}
	if len(e.Flags) > 0 {
		s += " " + strings.Join(e.Flags, ",")
	}
	return s
}

func (e *Reject) String() string {
	if e.Type == "" || (e.Type == "icmp" || e.Type == "icmpx" || e.Type == "icmpv6") && (e.Code == "" || e.Code == "port-unreachable") {
		return "reject"
	}
	if e.Code == "" {
		return "reject with " + e.Type
	}
	return "reject with " + e.Type + " " + e.Code
}

func (e *SetStmt) String() string {
	s := e.Op + " @" + e.Set + " { " + e.Elem.String()
	if e.Timeout > 0 {
		s += fmt.Sprintf(" timeout %ds", e.Timeout)
	}
	if e.Data != nil {
		s += " : " + e.Data.String()
	}
	return s + " }"
}

func (e *CounterStmt) String() string {
	if e.Name != "" {
		return "counter name " + strconv.Quote(e.Name)
	}
	return "counter"
}

func (e *Log) String() string {
	if e.Prefix != "" {
		return "log prefix " + strconv.Quote(e.Prefix)
	}
	return "log"
}

func (e *Notrack) String() string { return "notrack" }

func (e *Limit) String() string { return "limit " + e.Text }

func (e *XT) String() string { return "xt " + e.Type + " " + e.Name }

// String formats an element as nft lists it: key, attributes, then the
// data of a map element.
func (el *Element) String() string {
	s := el.Key.String()
	if el.Timeout > 0 {
		s += fmt.Sprintf(" timeout %ds", el.Timeout)
	}
	if el.Expires > 0 {
		s += fmt.Sprintf(" expires %ds", el.Expires)
	}
	if el.Comment != "" {
		s += " comment " + strconv.Quote(el.Comment)
	}
	if el.Data != nil {
		s += " : " + el.Data.String()
	}
	return s
}

func joinExprs(es []Expr, sep string) string {
	parts := make([]string, 0, len(es))
	for _, e := range es {
		parts = append(parts, e.String())
	}
	return strings.Join(parts, sep)
}

// operand formats the right side of a match, mangle or binop the way nft
// does for its left side: marks in hex, interface names quoted.
func operand(left, right Expr) string {
	lit, ok := right.(*Literal)
	if !ok {
		return right.String()
	}
	switch {
	case isMarkExpr(left) && lit.Num:
		if n, err := strconv.ParseUint(lit.Text, 10, 32); err == nil {
			return fmt.Sprintf("0x%08x", n)
		}
	case isIfname(left):
		return strconv.Quote(lit.Text)
	}
	return lit.Text
}

func isMarkExpr(e Expr) bool {
	switch x := e.(type) {
	case *Meta:
		return x.Key == "mark"
	case *CT:
		return x.Key == "mark"
	case *Binop:
		return isMarkExpr(x.Left)
	}
	return false
}

func isIfname(e Expr) bool {
	m, ok := e.(*Meta)
	return ok && (m.Key == "iifname" || m.Key == "oifname")
}
