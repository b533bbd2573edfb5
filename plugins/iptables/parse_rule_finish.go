package iptables

// implicitMatch handles "-p tcp --dport 80" without "-m tcp": iptables
// loads the protocol's match module, so do the same (and say so).
func (rp *ruleParser) implicitMatch(name string, col int) {
	if rp.r.Protocol == nil {
		return
	}
	mod, known := knownMatchModule(rp.r.Protocol.Name)
	if !known {
		return
	}
	if _, _, ok := knownMatchOption(mod, name); !ok {
		return
	}
	o := len(rp.p.sOpts)
	rp.p.sMatches = append(rp.p.sMatches, scratchMatch{module: mod, known: true, o0: o, o1: o, col: col, end: col})
	rp.ctx = ruleCtxMatch
	rp.p.note(rp.n, "option --%s without -m %s: read as -m %s --%s, as iptables does", name, mod, mod, name)
}

// finish copies the scratch matches and options into r, using the
// parser's slabs, and records what was kept without being understood.
func (rp *ruleParser) finish() {
	p, r := rp.p, rp.r
	args := p.strs.take(len(p.sArgs))
	copy(args, p.sArgs)
	opts := p.options.take(len(p.sOpts))
	for k := range p.sOpts {
		so := &p.sOpts[k]
		opts[k] = Option{Negate: so.neg, Name: so.name}
		if so.b > so.a {
			opts[k].Args = args[so.a:so.b:so.b]
		}
	}
	if len(p.sMatches) > 0 {
		ms := p.matches.take(len(p.sMatches))
		for k := range p.sMatches {
			sm := &p.sMatches[k]
			ms[k] = Match{Module: sm.module, Known: sm.known && !sm.partial}
			if sm.o1 > sm.o0 {
				ms[k].Options = opts[sm.o0:sm.o1:sm.o1]
			}
			switch {
			case !sm.known:
				r.Unknown = append(r.Unknown, rp.line[sm.col:sm.end])
				p.note(rp.n, "unknown match module %s kept verbatim", sm.module)
			case sm.partial:
				rp.unknownOptions(sm.o0, sm.o1, "-m", sm.module)
			}
		}
		r.Matches = ms
		for k := range ms {
			if ms[k].Module == "statistic" {
				f := rp.facts()
				f.stat = readStatistic(&ms[k])
				f.stat.match, f.stat.set = k, true
				break
			}
		}
	}
	if rp.t1 > rp.t0 {
		r.TargetOptions = opts[rp.t0:rp.t1:rp.t1]
		if o, ok := r.TargetOption("to-destination"); ok && r.Target == "DNAT" && len(o.Args) > 0 {
			rp.facts().dnat = readDNAT(o.Args[0])
		}
		if rp.tKnown {
			rp.unknownOptions(rp.t0, rp.t1, "-j", r.Target)
		} else {
			r.Unknown = append(r.Unknown, rp.line[rp.tCol:rp.tEnd])
			p.note(rp.n, "unknown target %s with options kept verbatim (a jump to a chain takes no options)", r.Target)
		}
	}
}

// unknownOptions records the options in sOpts[o0:o1] that the module
// (flag -m) or target (flag -j) called name does not have.
func (rp *ruleParser) unknownOptions(o0, o1 int, flag, name string) {
	what := "match module"
	if flag == "-j" {
		what = "target"
	}
	for k := o0; k < o1; k++ {
		if so := &rp.p.sOpts[k]; so.unknown {
			rp.r.Unknown = append(rp.r.Unknown, flag+" "+name+" "+rp.line[so.col:so.end])
			rp.p.note(rp.n, "unknown option --%s of %s %s kept verbatim", so.name, what, name)
		}
	}
}

// facts are the rule's ruleFacts, made on first use.
func (rp *ruleParser) facts() *ruleFacts {
	if rp.r.facts == nil {
		rp.r.facts = rp.p.facts.alloc()
	}
	return rp.r.facts
}
