package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/trace"
)

// traceScreen asks for a packet (node, source, destination, where it
// comes from) and shows every branch it can take through the node's
// rules, each with its hops.
type traceScreen struct {
	fields  []textinput.Model
	focus   int
	editing bool
	r       *trace.TraceReport
	err     error
	list    list
	copies  []string
	// width is the width the hops were wrapped to.
	width int
	// gen counts the traces asked for: only the last one's answer shows;
	// busy, while it is computed.
	gen  int
	busy bool
}

var traceLabels = []string{"node", "source", "destination", "from"}

// traceFormHint says, under the empty form, the order tab goes through
// its fields and how to run the trace.
func traceFormHint() string {
	return "tab goes " + strings.Join(traceLabels, " → ") + " (shift+tab back); enter traces the packet"
}

// traceFieldWidth is the width of the trace form's fields: an IPv6
// address with a port and a protocol fits.
const traceFieldWidth = 52

func newTraceScreen(a *App) *traceScreen {
	s := &traceScreen{editing: true}
	placeholders := []string{"node1", "10.244.1.5", "10.96.0.10:53/udp", "pod, node or external"}
	for i, p := range placeholders {
		f := steadyInput()
		f.Prompt = fmt.Sprintf("%-12s ", traceLabels[i]+":")
		f.Placeholder = p
		// Without a width, an empty field shows only the placeholder's
		// first character ("1" for 10.244.1.5).
		f.SetWidth(traceFieldWidth)
		s.fields = append(s.fields, f)
	}
	if a.sv != nil {
		if nodes := a.sv.Nodes(); len(nodes) > 0 {
			s.fields[0].SetValue(nodes[0].Name)
		}
	}
	s.fields[3].SetValue("pod")
	s.focus = 1
	s.fields[1].Focus()
	return s
}

func (s *traceScreen) crumb() string { return "Trace" }
func (s *traceScreen) typing() bool  { return s.editing }

func (s *traceScreen) keys(k keyMap) []key.Binding {
	if s.editing {
		return []key.Binding{k.NextField, k.PrevField, k.RunTrace, k.StopEditing}
	}
	return []key.Binding{k.Edit, k.Copy}
}

func (s *traceScreen) reload(a *App) tea.Cmd {
	if s.r != nil {
		return s.run(a)
	}
	return nil
}

// run traces the packet of the form, off the UI's goroutine.
func (s *traceScreen) run(a *App) tea.Cmd {
	v := func(i int) string { return strings.TrimSpace(s.fields[i].Value()) }
	spec, node, sv := trace.PacketSpec{Src: v(1), Dst: v(2), From: v(3)}, v(0), a.sv
	s.gen++
	gen := s.gen
	s.busy = true
	return background(func() func(*App) {
		r, err := sv.Trace(node, spec)
		return func(a *App) {
			if gen == s.gen {
				s.r, s.err, s.busy = r, err, false
				s.build(a)
			}
		}
	})
}

func (s *traceScreen) build(a *App) {
	s.width = max(a.width, 20)
	var rows []string
	var sel []bool
	s.copies = s.copies[:0]
	add := func(text, cp string, selectable bool) {
		rows, sel, s.copies = append(rows, text), append(sel, selectable), append(s.copies, cp)
	}
	if s.r != nil {
		add(a.st.Header.Render(s.r.Packet)+a.st.Dim.Render(fmt.Sprintf("  on %s (%s mode)", s.r.Node, orUnknown(s.r.Mode))), s.r.Packet, false)
		for _, b := range s.r.Branches {
			head := fmt.Sprintf("%-5s %s", behavior.FormatProbability(b.Probability), b.Verdict)
			if b.DNAT != "" {
				head += " to " + b.DNAT
			}
			if b.Pod != "" {
				head += " pod " + b.Pod
			}
			if b.Masquerade {
				head += ", masqueraded"
			}
			if b.Reason != "" {
				head += ": " + b.Reason
			}
			add("", "", false)
			add(head, b.DNAT, true)
			for _, h := range b.Hops {
				for i, line := range strings.Split(ansi.Wrap(wording.Printable(trace.HopText(h)), max(s.width-8, 20), " ,"), "\n") {
					if h.Shared || h.Line <= 0 {
						line = a.st.Dim.Render(line)
					}
					if i == 0 {
						add("    "+line, h.Rule, true)
					} else {
						add("      "+line, "", false)
					}
				}
			}
			for _, n := range b.Notes {
				add("    "+a.st.Dim.Render(wording.Printable(n)), n, false)
			}
		}
		for _, n := range s.r.Notes {
			add(a.st.Dim.Render("note: "+wording.Printable(n)), n, false)
		}
	}
	s.list.set(rows, sel)
}

func (s *traceScreen) update(a *App, msg tea.Msg) tea.Cmd {
	if !s.editing {
		if s.list.update(msg, a.keys) {
			return nil
		}
		if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, a.keys.Edit) {
			s.editing = true
			return s.fields[s.focus].Focus()
		}
		return nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, a.keys.NextField), key.Matches(k, a.keys.PrevField):
			s.fields[s.focus].Blur()
			step := 1
			if key.Matches(k, a.keys.PrevField) {
				step = len(s.fields) - 1
			}
			s.focus = (s.focus + step) % len(s.fields)
			return s.fields[s.focus].Focus()
		case key.Matches(k, a.keys.RunTrace):
			s.editing = false
			s.fields[s.focus].Blur()
			return s.run(a)
		case key.Matches(k, a.keys.StopEditing):
			s.editing = false
			s.fields[s.focus].Blur()
			return nil
		}
	}
	var cmd tea.Cmd
	s.fields[s.focus], cmd = s.fields[s.focus].Update(msg)
	return cmd
}

func (s *traceScreen) selection() string {
	if s.list.cursor < len(s.copies) {
		return s.copies[s.list.cursor]
	}
	return ""
}

func (s *traceScreen) view(a *App, width, height int) string {
	var form []string
	for _, f := range s.fields {
		form = append(form, f.View())
	}
	top := strings.Join(form, "\n") + "\n"
	used := len(form)
	switch {
	case s.err != nil:
		return top + a.st.Error.Render(s.err.Error())
	case s.r == nil && s.busy:
		return top + a.spin.View() + " tracing…"
	case s.r == nil:
		return top + a.st.Dim.Render(traceFormHint())
	}
	if width != s.width {
		s.width = width
		s.build(a)
	}
	return top + s.list.view(width, height-used, a.st)
}
