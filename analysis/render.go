package analysis

import (
	"fmt"
	"io"
	"strings"

	"github.com/svctrace/svctrace/internal/wording"
)

// RenderDrift writes a drift report as text; wide adds the rules involved.
func RenderDrift(w io.Writer, r *DriftReport, wide bool) {
	for _, n := range r.Nodes {
		if n.Error != "" {
			fmt.Fprintf(w, "node %s: not read: %s\n", n.Name, n.Error)
			continue
		}
		mode := n.Mode
		if mode == "" {
			mode = "unknown mode"
		} else {
			mode += " mode"
		}
		if n.Excerpt != "" {
			mode += ", an excerpt of its rules"
		}
		pending := ""
		if n.Pending > 0 {
			why := n.PendingWhy
			if why == "" {
				why = PendingQueued
			}
			pending = fmt.Sprintf(" (%s %s)", wording.Count(n.Pending, "difference", "differences"), why)
		}
		read := ""
		if wide && n.BytesRead > 0 {
			read = fmt.Sprintf(" [%s read from the node]", wording.Bytes(n.BytesRead))
		}
		checked := "checked"
		if n.CheckAge != "" {
			checked = "checked " + n.CheckAge + " ago by its agent"
		}
		if n.RulesReadAge != "" {
			checked += " (rules read " + n.RulesReadAge + " ago, unchanged since)"
		}
		fmt.Fprintf(w, "node %s (%s): %s %s, %s%s%s\n", n.Name, mode,
			wording.Count(n.Frontends, "frontend", "frontends"), checked, wording.Count(n.Findings, "finding", "findings"), pending, read)
	}
	if len(r.Findings) == 0 {
		in := ""
		if r.Scope != "" {
			in = " in " + r.Scope
		}
		if u := len(r.Unreadable()); u > 0 {
			fmt.Fprintf(w, "no drift%s on the %s read; %s not read\n", in,
				wording.Count(len(r.Nodes)-u, "node", "nodes"), wording.Count(u, "node", "nodes"))
		} else if r.excerpts() {
			fmt.Fprintf(w, "no drift%s in what the excerpt shows (an excerpt cannot show what is missing)\n", in)
		} else {
			fmt.Fprintf(w, "no drift%s\n", in)
		}
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "\n%s  node=%s", f.Type, f.Node)
		if f.Service != "" {
			fmt.Fprintf(w, " service=%s", f.Service)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %s\n", f.Message)
		if len(f.Frontends) > 0 {
			fmt.Fprintf(w, "  frontends: %s\n", strings.Join(f.Frontends, "; "))
		}
		fmt.Fprintf(w, "  expected: %s\n  observed: %s\n", f.Expected, f.Observed)
		if wide {
			if len(f.Sources) > 0 {
				fmt.Fprintf(w, "  sources:  %s\n", strings.Join(f.Sources, ", "))
			}
			for _, rule := range f.Rules {
				fmt.Fprintf(w, "  rule: %s\n", rule)
			}
		} else if len(f.Rules) > 0 {
			fmt.Fprintf(w, "  rule: %s\n", f.Rules[0])
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// excerpts reports whether a node of the report was read from an excerpt
// of its rules.
func (r *DriftReport) excerpts() bool {
	for _, n := range r.Nodes {
		if n.Excerpt != "" {
			return true
		}
	}
	return false
}
