package iptables

// pendingJump is a rule of the table being read whose target names a
// chain; the chain must exist by the table's COMMIT.
type pendingJump struct {
	rule *Rule
	col  int // 0-based offset of the target name in rule.Raw
}

// jumpsToChain reports whether r's target names a chain: not a verdict or
// target extension, and without options (a chain takes none; an unknown
// extension with options is kept verbatim instead).
func jumpsToChain(r *Rule) bool {
	return r.Target != "" && len(r.TargetOptions) == 0 && !isKnownTarget(r.Target) && !isExtensionTarget(r.Target)
}

// isExtensionTarget names target extensions the walk does not evaluate
// but that are no chains either.
func isExtensionTarget(t string) bool {
	switch t {
	case "AUDIT", "MIRROR", "ULOG", "SECMARK", "CONNSECMARK", "NETMAP", "TEE", "SET", "SYNPROXY",
		"TTL", "HL", "ECN", "TOS", "HMARK", "IDLETIMER", "LED", "RATEEST", "CLUSTERIP", "FLOWOFFLOAD",
		"DNPT", "SNPT", "TCPOPTSTRIP":
		return true
	}
	return false
}

// checkJumps runs at COMMIT: a jump to a chain the table does not define
// is an error, as iptables-restore refuses such a table.
func (p *dumpParser) checkJumps() error {
	defer func() { p.jumps = p.jumps[:0] }()
	for _, j := range p.jumps {
		if err := p.checkJump(j.rule, j.col); err != nil {
			return err
		}
	}
	return nil
}

// checkJump is checkJumps for one rule of the table being read, whose
// target name starts at col; it keeps the chain in the rule.
func (p *dumpParser) checkJump(r *Rule, col int) error {
	if c := p.table.Chain(r.Target); c != nil {
		r.jump = c
		return nil
	}
	flag := "-j"
	if r.Goto {
		flag = "-g"
	}
	return p.errAt(r.Raw, r.Line, col, "%s %s: table %s (line %d) defines no chain %s",
		flag, r.Target, p.table.Name, p.tableLine, r.Target)
}
