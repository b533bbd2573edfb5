package nftables

// matchStmt evaluates match statement st, statement i of rule r, and
// goes on with the rule's next statement where it matches.
func (k *walk) matchStmt(s *state, t *Table, c *Chain, r *Rule, i int, rc rctx, st *Match) []ruleOut {
	k.recordSources(s, t, st)
	if singleValued(st.Left) {
		// One value: as split and fork do with one alternative,
		// without their slices.
		ok, h := k.test(s, t, c, r, st, k.evalKey(s, t, st.Left))
		if !ok {
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		if h != nil && (h.text != "" || h.el != nil) {
			rc.hits = append(rc.hits[:len(rc.hits):len(rc.hits)], *h)
		}
		return k.stmts(s, t, c, r, i+1, rc)
	}
	alts := k.split(k.eval(s, t, st.Left), func(a alt) *hit {
		ok, h := k.test(s, t, c, r, st, a.v)
		if !ok {
			return nil
		}
		if h == nil {
			h = &hit{}
		}
		return h
	})
	return k.fork(s, alts, rc, func(s *state, a alt, rc rctx) []ruleOut {
		if a.v.n == 0 {
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		return k.stmts(s, t, c, r, i+1, rc)
	})
}

// vmapStmt evaluates verdict map statement st of rule r: the verdict of
// the element the packet's key finds.
func (k *walk) vmapStmt(s *state, t *Table, c *Chain, r *Rule, rc rctx, st *VMap) []ruleOut {
	if singleValued(st.Key) {
		h := k.lookup(s, t, c, r, st.Data, k.evalKey(s, t, st.Key))
		if h == nil || h.el == nil {
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		v, ok := h.el.Data.(*Verdict)
		if !ok {
			s.note("%s: element %s of a verdict map holds no verdict; assumed not to match", ruleRef(t, c, r), h.desc())
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		rc.hits = append(rc.hits[:len(rc.hits):len(rc.hits)], *h)
		rc.via = &rc.hits[len(rc.hits)-1]
		return k.verdict(s, t, c, r, v, rc)
	}
	alts := k.split(k.eval(s, t, st.Key), func(a alt) *hit {
		h := k.lookup(s, t, c, r, st.Data, a.v)
		if h == nil || h.el == nil {
			return nil
		}
		if _, ok := h.el.Data.(*Verdict); !ok {
			s.note("%s: element %s of a verdict map holds no verdict; assumed not to match", ruleRef(t, c, r), h.desc())
			return nil
		}
		return h
	})
	return k.fork(s, alts, rc, func(s *state, a alt, rc rctx) []ruleOut {
		if a.v.n == 0 {
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		h := &rc.hits[len(rc.hits)-1]
		rc.via = h
		return k.verdict(s, t, c, r, h.el.Data.(*Verdict), rc)
	})
}

// mangleStmt performs mangle statement st, statement i of rule r, and
// goes on with the rule's next statement.
func (k *walk) mangleStmt(s *state, t *Table, c *Chain, r *Rule, i int, rc rctx, st *Mangle) []ruleOut {
	if singleValued(st.Value) {
		k.mangle(s, t, c, r, st, k.evalKey(s, t, st.Value))
		return k.stmts(s, t, c, r, i+1, rc)
	}
	return k.fork(s, k.eval(s, t, st.Value), rc, func(s *state, a alt, rc rctx) []ruleOut {
		k.mangle(s, t, c, r, st, a.v)
		return k.stmts(s, t, c, r, i+1, rc)
	})
}
