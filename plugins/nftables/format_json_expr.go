package nftables

import "fmt"

// stmt writes one statement as nft's JSON does.
func (w *jsonWriter) stmt(s Stmt) {
	switch x := s.(type) {
	case *Match:
		w.raw(`{"match": {"op": `)
		w.str(x.Op)
		w.raw(`, "left": `)
		w.expr(x.Left)
		w.raw(`, "right": `)
		w.expr(x.Right)
		w.raw("}}")
	case *VMap:
		w.raw(`{"vmap": {"key": `)
		w.expr(x.Key)
		w.raw(`, "data": `)
		w.expr(x.Data)
		w.raw("}}")
	case *Mangle:
		w.raw(`{"mangle": {"key": `)
		w.expr(x.Key)
		w.raw(`, "value": `)
		w.expr(x.Value)
		w.raw("}}")
	case *Verdict:
		w.expr(x)
	case *NAT:
		w.nat(x)
	case *Reject:
		if x.Type == "" && x.Code == "" {
			w.raw(`{"reject": null}`)
			return
		}
		w.raw(`{"reject": {"type": `)
		w.str(x.Type)
		w.optStr(`, "expr": `, x.Code)
		w.raw("}}")
	case *SetStmt:
		w.raw(`{"set": {"op": `)
		w.str(x.Op)
		w.raw(`, "elem": `)
		if x.Timeout != 0 {
			w.raw(`{"elem": {"val": `)
			w.expr(x.Elem)
			w.int(`, "timeout": `, x.Timeout)
			w.raw("}}")
		} else {
			w.expr(x.Elem)
		}
		if x.Data != nil {
			w.raw(`, "data": `)
			w.expr(x.Data)
		}
		w.raw(`, "set": `)
		w.str("@" + x.Set)
		w.raw("}}")
	case *CounterStmt:
		if x.Name != "" {
			w.raw(`{"counter": `)
			w.str(x.Name)
			w.raw("}")
			return
		}
		w.raw(`{"counter": {"packets": 0, "bytes": 0}}`)
	case *Log:
		if x.Prefix == "" {
			w.raw(`{"log": null}`)
			return
		}
		w.raw(`{"log": {"prefix": `)
		w.str(x.Prefix)
		w.raw("}}")
	case *Notrack:
		w.raw(`{"notrack": null}`)
	case *XT:
		w.raw(`{"xt": {"type": `)
		w.str(x.Type)
		w.raw(`, "name": `)
		w.str(x.Name)
		w.raw("}}")
	default:
		w.fail(s)
	}
}

func (w *jsonWriter) fail(v any) {
	if w.err == nil {
		w.err = fmt.Errorf("nftables: no JSON form for %T %v", v, v)
	}
	w.raw("null")
}

func (w *jsonWriter) nat(n *NAT) {
	if n.Family == "" && n.Addr == nil && n.Port == nil && len(n.Flags) == 0 {
		w.raw("{")
		w.str(n.Kind)
		w.raw(": null}")
		return
	}
	w.raw("{")
	w.str(n.Kind)
	w.raw(": {")
	sep := ""
	if n.Family != "" {
		w.raw(`"family": `)
		w.str(n.Family)
		sep = ", "
	}
	if n.Addr != nil {
		w.raw(sep + `"addr": `)
		w.expr(n.Addr)
		sep = ", "
	}
	if n.Port != nil {
		w.raw(sep + `"port": `)
		w.expr(n.Port)
		sep = ", "
	}
	if len(n.Flags) > 0 {
		w.raw(sep + `"flags": `)
		w.strs(n.Flags)
	}
	w.raw("}}")
}

// expr writes one expression as nft's JSON does.
func (w *jsonWriter) expr(e Expr) {
	switch x := e.(type) {
	case *Literal:
		if x.Num {
			w.raw(x.Text)
		} else {
			w.str(x.Text)
		}
	case *Payload:
		if x.Protocol == "" {
			w.raw(`{"payload": {"base": `)
			w.str(x.Base)
			w.int(`, "offset": `, int64(x.Offset))
			w.int(`, "len": `, int64(x.Len))
			w.raw("}}")
			return
		}
		w.raw(`{"payload": {"protocol": `)
		w.str(x.Protocol)
		w.raw(`, "field": `)
		w.str(x.Field)
		w.raw("}}")
	case *Meta:
		w.raw(`{"meta": {"key": `)
		w.str(x.Key)
		w.raw("}}")
	case *CT:
		w.raw(`{"ct": {"key": `)
		w.str(x.Key)
		w.optStr(`, "dir": `, x.Dir)
		w.optStr(`, "family": `, x.Family)
		w.raw("}}")
	case *Fib:
		w.raw(`{"fib": {"result": `)
		w.str(x.Result)
		w.raw(`, "flags": [`)
		w.each(len(x.Flags), func(i int) { w.str(x.Flags[i]) })
		w.raw("]}}")
	case *Numgen:
		w.raw(`{"numgen": {"mode": `)
		w.str(x.Mode)
		w.int(`, "mod": `, int64(x.Mod))
		w.int(`, "offset": `, int64(x.Offset))
		w.raw("}}")
	case *Concat:
		w.raw(`{"concat": [`)
		w.exprs(x.Parts)
		w.raw("]}")
	case *Prefix:
		w.raw(`{"prefix": {"addr": `)
		w.expr(x.Addr)
		w.int(`, "len": `, int64(x.Len))
		w.raw("}}")
	case *Range:
		w.raw(`{"range": [`)
		w.exprs([]Expr{x.Lo, x.Hi})
		w.raw("]}")
	case *SetRef:
		w.str("@" + x.Name)
	case *AnonSet:
		w.raw(`{"set": [`)
		w.each(len(x.Elems), func(i int) { w.element(x.Elems[i]) })
		w.raw("]}")
	case *List:
		w.raw("[")
		w.exprs(x.Items)
		w.raw("]")
	case *Binop:
		w.raw("{")
		w.str(x.Op)
		w.raw(": [")
		w.exprs([]Expr{x.Left, x.Right})
		w.raw("]}")
	case *MapLookup:
		w.raw(`{"map": {"key": `)
		w.expr(x.Key)
		w.raw(`, "data": `)
		w.expr(x.Data)
		w.raw("}}")
	case *Verdict:
		w.raw("{")
		w.str(x.Kind)
		if x.Kind == "jump" || x.Kind == "goto" {
			w.raw(`: {"target": `)
			w.str(x.Target)
			w.raw("}}")
			return
		}
		w.raw(": null}")
	default:
		w.fail(e)
	}
}

func (w *jsonWriter) exprs(es []Expr) { w.each(len(es), func(i int) { w.expr(es[i]) }) }
