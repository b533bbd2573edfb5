package iptables

import "strings"

// scratchOption is an option while its rule is parsed; args index p.sArgs.
type scratchOption struct {
	neg      bool
	unknown  bool
	name     string
	a, b     int // args range in p.sArgs
	col, end int // text span in the line, including a leading !
}

// scratchMatch is a -m module while its rule is parsed.
type scratchMatch struct {
	module   string
	known    bool // the module is known
	partial  bool // ... but some option is not
	o0, o1   int  // options range in p.sOpts
	col, end int  // text span of "-m module options..."
}

const (
	ruleCtxNone = iota
	ruleCtxMatch
	ruleCtxTarget
)

// ruleParser is the state of parsing the options of one -A line.
type ruleParser struct {
	p      *dumpParser
	r      *Rule
	line   string
	n      int
	toks   []lexToken
	ctx    int
	neg    bool
	negCol int
	// target: known target, options range and text span.
	tKnown     bool
	t0, t1     int
	tCol, tEnd int
}

// parseRule fills r from the tokens after "-A CHAIN".
func (p *dumpParser) parseRule(r *Rule, line string, n int, toks []lexToken) error {
	p.sArgs, p.sOpts, p.sMatches = p.sArgs[:0], p.sOpts[:0], p.sMatches[:0]
	rp := ruleParser{p: p, r: r, line: line, n: n, toks: toks}
	for i := 0; i < len(toks); {
		t := toks[i]
		if !t.quoted && t.text == "!" {
			if rp.neg {
				return rp.errAt(t.col, "two ! in a row")
			}
			rp.neg, rp.negCol = true, t.col
			i++
			continue
		}
		if t.quoted || len(t.text) < 2 || t.text[0] != '-' {
			return rp.errAt(t.col, "unexpected %q where an option was expected", t.text)
		}
		var err error
		switch g := lexGenericOption(t.text); {
		case g != 0:
			i, err = rp.generic(g, i)
		case t.text[1] == '-':
			i, err = rp.option(i)
		default:
			err = rp.errAt(t.col, "unknown option %s", t.text)
		}
		if err != nil {
			return err
		}
		rp.neg = false
	}
	if rp.neg {
		return rp.errAt(rp.negCol, "! at the end of the rule: nothing to negate")
	}
	rp.finish()
	return nil
}

func (rp *ruleParser) errAt(col int, format string, args ...any) error {
	return rp.p.errAt(rp.line, rp.n, col, format, args...)
}

// generic parses -s, -d, -i, -o, -p, -f, -m, -j, -g and -c at toks[i]
// and returns the index of the next token.
func (rp *ruleParser) generic(g byte, i int) (int, error) {
	r, t := rp.r, rp.toks[i]
	if g == 'f' {
		if r.Fragment != nil {
			return 0, rp.errAt(t.col, "multiple %s options", t.text)
		}
		r.Fragment = rp.p.bools.alloc()
		*r.Fragment = !rp.neg
		return i + 1, nil
	}
	switch g {
	case 'm', 'j', 'g', 'c':
		if rp.neg {
			return 0, rp.errAt(rp.negCol, "! cannot negate %s", t.text)
		}
	default:
		// The old form puts the ! after the option: -s ! 10.0.0.0/8.
		if i+1 < len(rp.toks) && lexBang(rp.toks[i+1]) {
			if rp.neg {
				return 0, rp.errAt(rp.toks[i+1].col, "two ! for one option")
			}
			rp.neg = true
			i++
		}
	}
	nargs := 1
	if g == 'c' {
		nargs = 2
	}
	if i+nargs >= len(rp.toks) {
		return 0, rp.errAt(len(rp.line), "%s needs an argument: the line is truncated", t.text)
	}
	arg := rp.toks[i+1]
	if arg.text == "" || (!arg.quoted && (arg.text[0] == '-' || arg.text == "!")) {
		return 0, rp.errAt(arg.col, "%s needs an argument, found %q", t.text, arg.text)
	}
	if err := rp.genericArg(g, i, &t, &arg); err != nil {
		return 0, err
	}
	return i + 1 + nargs, nil
}

// genericArg reads the argument arg of generic option t (letter g), token
// i+1 of the rule.
func (rp *ruleParser) genericArg(g byte, i int, t, arg *lexToken) error {
	r := rp.r
	switch g {
	case 's', 'd':
		return rp.addrArg(g, t, arg)
	case 'i', 'o':
		dst := &r.InIface
		if g == 'o' {
			dst = &r.OutIface
		}
		if *dst != nil {
			return rp.errAt(t.col, "multiple %s options", t.text)
		}
		m := rp.p.ifaces.alloc()
		*m = IfaceMatch{Negate: rp.neg, Name: arg.text}
		*dst = m
	case 'p':
		if r.Protocol != nil {
			return rp.errAt(t.col, "multiple %s options", t.text)
		}
		m := rp.p.protos.alloc()
		*m = ProtoMatch{Negate: rp.neg, Name: strings.ToLower(arg.text)}
		r.Protocol = m
	case 'm':
		mod, known := knownMatchModule(arg.text)
		o := len(rp.p.sOpts)
		rp.p.sMatches = append(rp.p.sMatches, scratchMatch{
			module: mod, known: known, o0: o, o1: o, col: t.col, end: arg.end,
		})
		rp.ctx = ruleCtxMatch
	case 'j', 'g':
		if r.Target != "" {
			return rp.errAt(t.col, "second target %s: the rule already has -j %s", arg.text, r.Target)
		}
		r.Target, r.Goto = arg.text, g == 'g'
		rp.ctx, rp.tKnown = ruleCtxTarget, isKnownTarget(arg.text)
		rp.t0, rp.t1 = len(rp.p.sOpts), len(rp.p.sOpts)
		rp.tCol, rp.tEnd = t.col, arg.end
		rp.p.targetCol = arg.col
	case 'c':
		if !lexDigits(arg.text) || !lexDigits(rp.toks[i+2].text) {
			return rp.errAt(arg.col, "%s needs two numbers", t.text)
		}
	}
	return nil
}

// addrArg reads the address arg of -s or -d (option t, letter g).
func (rp *ruleParser) addrArg(g byte, t, arg *lexToken) error {
	r := rp.r
	dst := &r.Source
	if g == 'd' {
		dst = &r.Dest
	}
	if *dst != nil {
		return rp.errAt(t.col, "multiple %s options", t.text)
	}
	a := rp.p.addrs.alloc()
	pfx, err := parseAddrArg(arg.text)
	switch {
	case err != nil && redaction(arg.text):
		*a = AddrMatch{Negate: rp.neg, Redacted: arg.text}
		rp.p.note(rp.n, "address %s is redacted: the rule is kept, and taken as not matching (negated: as matching)", arg.text)
	case err != nil:
		return rp.errAt(arg.col, "%v", err)
	default:
		if err := rp.p.checkFamily(pfx.Addr(), rp.line, rp.n, arg.col); err != nil {
			return err
		}
		*a = AddrMatch{Negate: rp.neg, Prefix: pfx}
	}
	*dst = a
	return nil
}

// option parses "[!] --name args..." of the current match or target at
// toks[i] and returns the index of the next token.
func (rp *ruleParser) option(i int) (int, error) {
	p, t := rp.p, rp.toks[i]
	name := t.text[2:]
	if rp.ctx == ruleCtxNone {
		rp.implicitMatch(name, t.col)
	}
	var (
		canon = name
		nargs int
		ok    bool
	)
	switch rp.ctx {
	case ruleCtxNone:
		return 0, rp.errAt(t.col, "option %s outside a match or target: expected -m MODULE or -j TARGET before it", t.text)
	case ruleCtxMatch:
		if m := &p.sMatches[len(p.sMatches)-1]; m.known {
			canon, nargs, ok = knownMatchOption(m.module, name)
		}
	case ruleCtxTarget:
		if rp.tKnown {
			canon, nargs, ok = knownTargetOption(rp.r.Target, name)
		}
	}
	if name == "" {
		return 0, rp.errAt(t.col, "empty option name")
	}
	start := t.col
	if rp.neg {
		start = rp.negCol
	}
	j := i + 1
	// The old form puts the ! after the option name (--ctstate ! NEW); a
	// comment cannot be negated, so there "!" is the text.
	if ok && nargs != 0 && canon != "comment" && j < len(rp.toks) && lexBang(rp.toks[j]) {
		if rp.neg {
			return 0, rp.errAt(rp.toks[j].col, "two ! for one option")
		}
		rp.neg = true
		j++
	}
	a := len(p.sArgs)
	switch {
	case !ok || nargs < 0:
		for j < len(rp.toks) && !lexOptionish(rp.toks[j]) {
			p.sArgs = append(p.sArgs, rp.toks[j].text)
			j++
		}
		if ok && len(p.sArgs) == a {
			return 0, rp.errAt(len(rp.line), "%s needs arguments: the line is truncated", t.text)
		}
	default:
		if j+nargs > len(rp.toks) {
			return 0, rp.errAt(len(rp.line), "%s needs %d argument(s): the line is truncated", t.text, nargs)
		}
		for _, at := range rp.toks[j : j+nargs] {
			p.sArgs = append(p.sArgs, at.text)
		}
		if ok {
			flag, owner := "-j", rp.r.Target
			if rp.ctx == ruleCtxMatch {
				flag, owner = "-m", p.sMatches[len(p.sMatches)-1].module
			}
			if err := rp.checkValue(flag, owner, canon, rp.toks[j:j+nargs]); err != nil {
				return 0, err
			}
		}
		j += nargs
	}
	end := rp.toks[j-1].end
	p.sOpts = append(p.sOpts, scratchOption{
		neg: rp.neg, unknown: !ok, name: canon, a: a, b: len(p.sArgs), col: start, end: end,
	})
	if rp.ctx == ruleCtxMatch {
		m := &p.sMatches[len(p.sMatches)-1]
		m.o1, m.end = len(p.sOpts), end
		m.partial = m.partial || (m.known && !ok)
	} else {
		rp.t1, rp.tEnd = len(p.sOpts), end
	}
	return j, nil
}
