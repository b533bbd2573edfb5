package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/trace"
)

// pathsScreen is one Service on one node: every frontend, what each
// client class meets there, every backend with its probability and Pod;
// a backend (or a rejecting class) opens to the exact kernel rules of its
// path. Then the API-side causes, the findings and the notes.
type pathsScreen struct {
	ref  analysis.ServiceRef
	node string
	r    *trace.ExplainReport
	err  error
	// open holds the expanded items, by item id.
	open  map[string]bool
	items []pathItem
	list  list
	// gen counts the reloads: only the last one's answer shows; busy,
	// while it is computed.
	gen  int
	busy bool
	// named: the breadcrumb names the Service (it was opened from a
	// finding, not from the Service's own screen).
	named bool
	// width is the width the rows were laid out for: rules wrap to it.
	width int
	// focus, when set, is the item the cursor goes to on the first
	// reload (a finding opened here points at its endpoint).
	focus string
}

// pathItem is one row: ids name the rows that expand; anchor names the
// rows a finding can point at (a frontend, a backend).
type pathItem struct {
	text       string
	id         string // expandable rows only
	anchor     string
	copy       string
	selectable bool
}

func newPathsScreen(ref analysis.ServiceRef, node string) *pathsScreen {
	return &pathsScreen{ref: ref, node: node, open: map[string]bool{}}
}

func (s *pathsScreen) crumb() string {
	if s.named {
		return s.ref.Namespace + "/" + s.ref.Name + " on " + s.node
	}
	return "paths on " + s.node
}
func (s *pathsScreen) typing() bool { return false }

func (s *pathsScreen) keys(k keyMap) []key.Binding {
	// Enter is offered only on a row it unfolds.
	if s.list.cursor < len(s.items) && s.items[s.list.cursor].id != "" {
		return []key.Binding{k.Unfold, k.Connections, k.Copy}
	}
	return []key.Binding{k.Connections, k.Copy}
}

// reload explains the Service on the node off the UI's goroutine: the
// first question about a node analyses it.
func (s *pathsScreen) reload(a *App) tea.Cmd {
	s.gen++
	gen, sv := s.gen, a.sv
	s.busy = true
	return background(func() func(*App) {
		r, err := sv.Explain(s.ref, s.node)
		return func(a *App) {
			if gen == s.gen {
				s.r, s.err, s.busy = r, err, false
				s.show(a)
			}
		}
	})
}

// show lays out the report, unfolding and selecting what a finding
// pointed at the first time.
func (s *pathsScreen) show(a *App) {
	if s.width == 0 {
		s.width = max(a.width, 20)
	}
	if s.focus != "" && s.r != nil {
		s.open[s.focus] = true
	}
	s.build(a)
	if s.focus != "" {
		for i, it := range s.items {
			if it.anchor == s.focus || it.id == s.focus {
				s.list.cursor = i
				break
			}
		}
		s.focus = ""
	}
}

// frontendAnchor names a frontend's heading, by its key's text.
func frontendAnchor(key string) string { return "frontend|" + key }

func backendID(f behavior.Frontend, c behavior.SourceClass, endpoint string) string {
	return f.Key.String() + "|" + string(c) + "|" + endpoint
}

// build lays the report out as rows.
func (s *pathsScreen) build(a *App) {
	st := a.st
	s.items = s.items[:0]
	add := func(it pathItem) { s.items = append(s.items, it) }
	text := func(t string) { add(pathItem{text: t}) }
	if s.r == nil {
		s.list.set(nil, nil)
		return
	}
	r := s.r
	text(st.Title.Render(fmt.Sprintf("%s on %s", r.Service, r.Node)) + st.Dim.Render(fmt.Sprintf("  (%s mode)", orUnknown(r.Mode))))
	if r.Skipped != "" {
		text("  " + wording.Printable(r.Skipped))
	}
	drifting := map[string][]string{} // a frontend's text: its findings' types
	for _, fd := range r.Findings {
		for _, fr := range fd.Frontends {
			if !slices.Contains(drifting[fr], fd.Type) {
				drifting[fr] = append(drifting[fr], fd.Type)
			}
		}
	}
	for _, f := range r.Frontends {
		text("")
		head := st.Header.Render(f.Key.String())
		if f.Service != "" {
			head += "  " + f.Service
		}
		if types := drifting[f.Key.String()]; len(types) > 0 {
			head += "  " + st.Drift.Render("drift: "+strings.Join(types, ", "))
		}
		add(pathItem{text: head, anchor: frontendAnchor(f.Key.String()), copy: f.Key.Addr(), selectable: true})
		var extras []string
		if f.Affinity != nil {
			extras = append(extras, fmt.Sprintf("session affinity ClientIP %ds", f.Affinity.TimeoutSeconds))
		}
		if f.LocalOnly {
			extras = append(extras, "external traffic policy Local")
		}
		if len(f.SourceRanges) > 0 {
			extras = append(extras, "only from "+strings.Join(f.SourceRanges, ", "))
		}
		if len(extras) > 0 {
			text("  " + st.Dim.Render(strings.Join(extras, " · ")))
		}
		for _, c := range behavior.SourceClasses {
			o, ok := f.Outcomes[c]
			if !ok {
				continue
			}
			s.outcome(st, f, c, o)
		}
	}
	if len(r.Causes) > 0 {
		text("")
		text(st.Header.Render("From the API objects"))
		for _, c := range r.Causes {
			add(pathItem{text: fmt.Sprintf("  %-7s %s: %s", c.Severity, c.Code, wording.Printable(c.Message)), copy: c.Message, selectable: true})
		}
	}
	if len(r.Findings) > 0 {
		text("")
		text(st.Drift.Render("Drift on this node"))
		for _, f := range r.Findings {
			add(pathItem{text: "  " + st.Drift.Render(f.Type) + ": " + wording.Printable(f.Message), copy: f.Message, selectable: true})
		}
	}
	if len(r.Notes) > 0 {
		text("")
		text(st.Header.Render("Notes"))
		for _, n := range r.Notes {
			add(pathItem{text: "  " + st.Dim.Render(wording.Printable(n)), copy: n, selectable: true})
		}
	}
	rows := make([]string, len(s.items))
	sel := make([]bool, len(s.items))
	for i, it := range s.items {
		rows[i], sel[i] = it.text, it.selectable
	}
	s.list.set(rows, sel)
}

// outcome adds a class's line, its backends, and the rules of the open
// ones.
func (s *pathsScreen) outcome(st Styles, f behavior.Frontend, c behavior.SourceClass, o behavior.Outcome) {
	verdict := trace.VerdictText(o)
	style := st.Forward
	switch o.Verdict {
	case behavior.Reject:
		style = st.Reject
	case behavior.Drop:
		style = st.Drop
	case behavior.Unhandled, behavior.Unknown:
		style = st.Unhandled
	}
	id, mark := "", " "
	if o.Verdict != behavior.Forward && len(o.Rules) > 0 {
		// Only a verdict's rules unfold here; a forward's are its
		// backends'.
		id = backendID(f, c, "")
		mark = expander(s.open[id])
	}
	s.items = append(s.items, pathItem{text: fmt.Sprintf("  %s %-14s %s", mark, trace.ClassLabel(c)+":", style.Render(verdict)), id: id, copy: verdict, selectable: true})
	if o.Verdict != behavior.Forward {
		if s.open[id] {
			s.rules(st, o.Rules)
		}
		return
	}
	for _, b := range o.Backends {
		bid := backendID(f, c, b.Endpoint)
		line := fmt.Sprintf("      %s %-5s %-21s", expander(s.open[bid]), behavior.FormatProbability(b.Probability), b.Endpoint)
		if p := s.r.Pods[b.Endpoint]; p != "" {
			line += " pod " + p
		}
		if c == behavior.FromPod && b.HairpinMasquerade {
			line += st.Dim.Render("  hairpin masquerade")
		}
		s.items = append(s.items, pathItem{text: line, id: bid, copy: b.Endpoint, selectable: true})
		if s.open[bid] {
			s.rules(st, b.Rules)
		}
	}
	if l := o.Leftover; l != nil {
		lid := backendID(f, c, "leftover")
		line := fmt.Sprintf("      %s %-5s %s", expander(s.open[lid]), behavior.FormatProbability(l.Probability), st.Drift.Render(trace.LeftoverText(l)))
		s.items = append(s.items, pathItem{text: line, id: lid, copy: trace.LeftoverText(l), selectable: true})
		if s.open[lid] {
			s.rules(st, l.Rules)
		}
	}
}

// rules adds the rules of a path: the Service's own rules plain, the
// plumbing every path shares dimmed.
func (s *pathsScreen) rules(st Styles, rs []behavior.Rule) {
	if len(rs) == 0 {
		s.items = append(s.items, pathItem{text: "            " + st.Dim.Render("(no rule recorded)")})
	}
	for _, r := range rs {
		t := wording.Printable(r.Text) // with the element it matched; a comment's controls escaped
		// A rule wraps, so its end (the DNAT, the verdict) always shows;
		// its first line is the one that selects it.
		const indent = "            "
		for i, line := range strings.Split(ansi.Wrap(t, max(s.width-len(indent)-4, 20), " ,"), "\n") {
			if r.Shared {
				line = st.Dim.Render(line)
			}
			if i == 0 {
				s.items = append(s.items, pathItem{text: indent + line, copy: r.Text, selectable: true})
				continue
			}
			s.items = append(s.items, pathItem{text: indent + "  " + line})
		}
	}
}

func expander(open bool) string {
	if open {
		return "−"
	}
	return "+"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func (s *pathsScreen) update(a *App, msg tea.Msg) tea.Cmd {
	if s.list.update(msg, a.keys) {
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, a.keys.Open), key.Matches(k, a.keys.Right), key.Matches(k, a.keys.Left):
		if s.list.cursor < len(s.items) {
			if id := s.items[s.list.cursor].id; id != "" {
				s.open[id] = !s.open[id]
				if key.Matches(k, a.keys.Right) {
					s.open[id] = true
				} else if key.Matches(k, a.keys.Left) {
					s.open[id] = false
				}
				s.build(a)
			}
		}
	case key.Matches(k, a.keys.Connections):
		return a.push(newConnectionsScreen(s.ref, s.node))
	}
	return nil
}

func (s *pathsScreen) selection() string {
	if s.list.cursor < len(s.items) {
		return s.items[s.list.cursor].copy
	}
	return ""
}

func (s *pathsScreen) view(a *App, width, height int) string {
	if s.err != nil {
		return a.st.Error.Render(s.err.Error())
	}
	if s.r == nil {
		return a.spin.View() + " analysing " + s.node + "…"
	}
	if width != s.width {
		s.width = width
		s.build(a)
	}
	return s.list.view(width, height, a.st)
}
