package trace

import (
	"fmt"
	"io"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

var classLabels = map[behavior.SourceClass]string{
	behavior.FromPod:      "from a pod",
	behavior.FromNode:     "from the node",
	behavior.FromExternal: "from outside",
}

// ClassLabel names a source class as the reports do ("from a pod").
func ClassLabel(c behavior.SourceClass) string { return classLabels[c] }

// RenderExplain writes an explain report as text. wide adds the rules of
// every source class, not only of the first one that forwards.
func RenderExplain(w io.Writer, r *ExplainReport, wide bool) {
	mode := r.Mode
	if mode == "" {
		mode = "unknown"
	}
	if r.Service == "" {
		fmt.Fprintf(w, "Every frontend on node %s (%s mode)\n", r.Node, mode)
	} else {
		fmt.Fprintf(w, "Service %s on node %s (%s mode)\n", r.Service, r.Node, mode)
	}
	if r.Skipped != "" {
		fmt.Fprintf(w, "\n  %s\n", r.Skipped)
	}
	for _, f := range r.Frontends {
		fmt.Fprintf(w, "\n%s", f.Key)
		if f.Service != "" {
			fmt.Fprintf(w, "  %s", f.Service)
		}
		fmt.Fprintln(w)
		var extras []string
		if f.Affinity != nil {
			extras = append(extras, fmt.Sprintf("session affinity ClientIP, %ds", f.Affinity.TimeoutSeconds))
		}
		if len(f.SourceRanges) > 0 {
			extras = append(extras, "only from "+strings.Join(f.SourceRanges, ", ")+" (loadBalancerSourceRanges)")
		}
		for _, e := range extras {
			fmt.Fprintf(w, "  %s\n", e)
		}
		renderOutcomes(w, f, r.Pods, wide)
	}
	if len(r.Conntrack) > 0 {
		fmt.Fprintf(w, "\nConnections (conntrack):\n")
		for _, fc := range r.Conntrack {
			fmt.Fprintf(w, "  %s -> %s: %s\n", fc.Frontend, fc.Backend, countsText(fc.Counts))
		}
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(w, "\nFrom the API objects:\n")
		for _, c := range r.Causes {
			fmt.Fprintf(w, "  %-7s %s: %s\n", c.Severity, c.Code, c.Message)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(w, "\nDrift on this node:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(w, "  %s: %s\n", f.Type, f.Message)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\nNotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

func renderOutcomes(w io.Writer, f behavior.Frontend, pods map[string]string, wide bool) {
	var shown *behavior.Outcome
	for _, c := range behavior.SourceClasses {
		o, ok := f.Outcomes[c]
		if !ok {
			continue
		}
		head := fmt.Sprintf("  %-14s %s", ClassLabel(c)+":", VerdictText(o))
		if !wide && shown != nil && sameBackends(*shown, o) {
			if o.Verdict == behavior.Forward {
				head += ", same backends"
			}
			fmt.Fprintln(w, head+assumedText(o, wide))
			continue
		}
		fmt.Fprintln(w, head+assumedText(o, wide))
		if wide {
			for _, a := range o.Assumed {
				fmt.Fprintf(w, "        assumes: %s\n", a)
			}
		}
		if o.Verdict != behavior.Forward {
			for i, rule := range o.Rules {
				// The short form keeps the Service's own rules and the
				// one that decided.
				if wide || !rule.Shared || i == len(o.Rules)-1 {
					fmt.Fprintf(w, "        %s\n", rule.Text)
				}
			}
			oc := o
			shown = &oc
			continue
		}
		for _, b := range o.Backends {
			line := fmt.Sprintf("    %-5s %s", behavior.FormatProbability(b.Probability), b.Endpoint)
			if p := pods[b.Endpoint]; p != "" {
				line += "  pod " + p
			}
			if wide && b.HairpinMasquerade && c == behavior.FromPod {
				line += "  (hairpin masquerade)"
			}
			fmt.Fprintln(w, line)
			for _, rule := range b.Rules {
				if wide || !rule.Shared {
					fmt.Fprintf(w, "          %s\n", rule.Text)
				}
			}
		}
		if l := o.Leftover; l != nil {
			fmt.Fprintf(w, "    %-5s %s\n", behavior.FormatProbability(l.Probability), LeftoverText(l))
			for _, rule := range l.Rules {
				if wide || !rule.Shared {
					fmt.Fprintf(w, "          %s\n", rule.Text)
				}
			}
		}
		oc := o
		shown = &oc
	}
}

// assumedText marks an answer that holds only if what its walks assumed
// holds (the short form; the wide one lists them).
func assumedText(o behavior.Outcome, wide bool) string {
	if len(o.Assumed) == 0 || wide {
		return ""
	}
	return " (" + wording.Count(len(o.Assumed), "assumption", "assumptions") + ": see Notes)"
}

// VerdictText says what happens to a source class's new connections, as
// the reports word it.
func VerdictText(o behavior.Outcome) string {
	switch o.Verdict {
	case behavior.Forward:
		m := "not masqueraded"
		if o.Masquerade {
			m = "masqueraded"
		}
		if l := o.Leftover; l != nil {
			return fmt.Sprintf("forward %s to %s, %s to none, %s", behavior.FormatProbability(1-l.Probability),
				wording.Count(len(o.Backends), "backend", "backends"), behavior.FormatProbability(l.Probability), m)
		}
		return fmt.Sprintf("forward to %s, %s", wording.Count(len(o.Backends), "backend", "backends"), m)
	case behavior.Reject:
		return "REJECT: " + o.Reason
	case behavior.Drop:
		return "DROP: " + o.Reason
	case behavior.Unknown:
		return "not known: " + o.Reason
	}
	return "not handled by any service rule"
}

// LeftoverText says what happens to the share of a frontend's connections
// that reach no backend.
func LeftoverText(l *behavior.Leftover) string {
	switch l.Verdict {
	case behavior.Drop:
		return "no backend: DROP: " + l.Reason
	case behavior.Reject:
		return "no backend: REJECT: " + l.Reason
	}
	return "no backend: " + l.Reason
}

func sameBackends(a, b behavior.Outcome) bool {
	if a.Verdict != b.Verdict || a.Reason != b.Reason || len(a.Backends) != len(b.Backends) || (a.Leftover == nil) != (b.Leftover == nil) {
		return false
	}
	for i := range a.Backends {
		if a.Backends[i].Endpoint != b.Backends[i].Endpoint || a.Backends[i].Probability != b.Backends[i].Probability {
			return false
		}
	}
	return true
}

// RenderTrace writes a trace report as text.
func RenderTrace(w io.Writer, r *TraceReport, wide bool) {
	fmt.Fprintf(w, "Packet %s on node %s: %s\n", r.Packet, r.Node, wording.Count(len(r.Branches), "branch", "branches"))
	for i, b := range r.Branches {
		fmt.Fprintf(w, "\n[%d] p=%s  %s", i+1, behavior.FormatProbability(b.Probability), strings.ToUpper(b.Verdict))
		if b.DNAT != "" {
			fmt.Fprintf(w, " -> %s", b.DNAT)
		}
		if b.Pod != "" {
			fmt.Fprintf(w, " (pod %s)", b.Pod)
		}
		if b.Service != "" {
			fmt.Fprintf(w, "  service %s", b.Service)
		}
		if b.Masquerade {
			fmt.Fprint(w, ", masqueraded")
		}
		if b.AffinitySeconds > 0 {
			fmt.Fprintf(w, ", client pinned for %ds (ClientIP affinity, record %s)", b.AffinitySeconds, b.AffinityKey)
		}
		if b.Reason != "" && b.Verdict != "forward" {
			fmt.Fprintf(w, "\n    reason: %s", b.Reason)
		}
		fmt.Fprintln(w)
		for _, h := range b.Hops {
			if h.Line > 0 || wide {
				fmt.Fprintf(w, "    %s\n", HopText(h))
			}
		}
		for _, n := range b.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// countsText writes flow counts in a fixed order: "2 live, 1 stale".
func countsText(c map[string]int) string {
	var parts []string
	for _, st := range []struct{ key, label string }{
		{"ok", "live"}, {"stale", "stale"}, {"draining", "draining"}, {"untranslated", "untranslated"}, {"closed", "closed"},
	} {
		if n := c[st.key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st.label))
		}
	}
	return strings.Join(parts, ", ")
}

// HopText is one hop of a trace as the reports show it: where the rule
// is (its dump line, or its chain and handle), the rule, the probability
// of its branch and the element it matched. A hop without a line is a
// rule the plane assumed.
func HopText(h Hop) string {
	if h.Line <= 0 {
		return fmt.Sprintf("%-6s %s: %s", h.Table, h.Chain, h.Rule)
	}
	p := ""
	if h.Probability > 0 {
		p = fmt.Sprintf(" [p=%s]", behavior.FormatProbability(h.Probability))
	}
	if h.Element != "" {
		p += "  [" + h.Element + "]"
	}
	if h.ByLine {
		return fmt.Sprintf("%-6s line %-5d %s%s", h.Table, h.Line, h.Rule, p)
	}
	// nftables: rules are numbered by handle and do not name their chain.
	return fmt.Sprintf("%s %s #%d: %s%s", h.Table, h.Chain, h.Line, h.Rule, p)
}
