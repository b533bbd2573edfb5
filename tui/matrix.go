package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/survey"
)

// matrixScreen is a Service on every node: a row per node, a column per
// frontend and client class.
type matrixScreen struct {
	ref   analysis.ServiceRef
	m     *survey.Matrix
	err   error
	first int // the first frontend shown (←/→ scroll)
	list  list
	// gen counts the reloads: only the last one's answer shows; busy,
	// while it is computed.
	gen  int
	busy bool
}

func newMatrixScreen(ref analysis.ServiceRef) *matrixScreen { return &matrixScreen{ref: ref} }

func (s *matrixScreen) crumb() string { return s.ref.Namespace + "/" + s.ref.Name }
func (s *matrixScreen) typing() bool  { return false }

func (s *matrixScreen) keys(k keyMap) []key.Binding {
	return []key.Binding{k.Open, k.Connections, k.Left, k.Right}
}

// reload explains the Service on every node, off the UI's goroutine: the
// first question about a node analyses it.
func (s *matrixScreen) reload(a *App) tea.Cmd {
	s.gen++
	gen, sv, ref := s.gen, a.sv, s.ref
	s.busy = true
	return background(func() func(*App) {
		m, err := sv.Matrix(ref)
		return func(*App) {
			if gen == s.gen {
				s.m, s.err, s.busy = m, err, false
			}
		}
	})
}

const (
	cellWidth = 7
	nodeWidth = 14
)

func (s *matrixScreen) update(a *App, msg tea.Msg) tea.Cmd {
	if s.list.update(msg, a.keys) {
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || s.m == nil {
		return nil
	}
	switch {
	case key.Matches(k, a.keys.Left):
		s.first = max(s.first-1, 0)
	case key.Matches(k, a.keys.Right):
		s.first = min(s.first+1, max(len(s.m.Frontends)-1, 0))
	case key.Matches(k, a.keys.Open):
		if n := s.node(); n != "" {
			return a.push(newPathsScreen(s.ref, n))
		}
	case key.Matches(k, a.keys.Connections):
		if n := s.node(); n != "" {
			return a.push(newConnectionsScreen(s.ref, n))
		}
	}
	return nil
}

func (s *matrixScreen) node() string {
	if s.m == nil || s.list.cursor >= len(s.m.Rows) {
		return ""
	}
	return s.m.Rows[s.list.cursor].Node
}

func (s *matrixScreen) selection() string { return s.node() }

func (s *matrixScreen) view(a *App, width, height int) string {
	if s.err != nil {
		return a.st.Error.Render(s.err.Error())
	}
	if s.m == nil {
		return a.spin.View() + " analysing the nodes…"
	}
	if len(s.m.Rows) == 0 {
		return a.st.Dim.Render("no node's kernel state was read")
	}
	fit := max((width-2-nodeWidth)/(3*cellWidth), 1)
	s.first = min(s.first, max(len(s.m.Frontends)-fit, 0))
	shown := s.m.Frontends[s.first:min(s.first+fit, len(s.m.Frontends))]
	var h1, h2 strings.Builder
	fmt.Fprintf(&h1, "  %-*s", nodeWidth, "")
	fmt.Fprintf(&h2, "  %-*s", nodeWidth, "NODE")
	for _, k := range shown {
		fmt.Fprintf(&h1, "%-*s", 3*cellWidth, cut(frontendLabel(k), 3*cellWidth-1))
		for _, c := range behavior.SourceClasses {
			fmt.Fprintf(&h2, "%-*s", cellWidth, classLabel(c))
		}
	}
	more := ""
	if s.first > 0 || s.first+len(shown) < len(s.m.Frontends) {
		more = fmt.Sprintf("frontends %d–%d of %d (←/→)", s.first+1, s.first+len(shown), len(s.m.Frontends))
	}
	rows := make([]string, len(s.m.Rows))
	for i, r := range s.m.Rows {
		rows[i] = s.row(a, r, shown)
	}
	s.list.set(rows, nil)
	top := a.st.Header.Render(h1.String()) + "\n" + a.st.Header.Render(h2.String())
	body := top + "\n" + s.list.view(width, height-6, a.st)
	legend := a.st.Dim.Render("  from a pod, the node, outside: →N forwarded to N backends, reject, drop,\n  none (no rule), - (no such frontend), DRIFT (a finding), wait (a change\n  kube-proxy has not synced yet)")
	if more != "" {
		legend = a.st.Dim.Render("  "+more) + "\n" + legend
	} else {
		legend = "\n" + legend
	}
	return fitLines(body, height-4) + "\n" + legend
}

func (s *matrixScreen) row(a *App, r survey.NodeRow, shown []behavior.Key) string {
	name := fmt.Sprintf("%-*s", nodeWidth, cut(r.Node, nodeWidth-1))
	if r.Err != nil {
		return name + a.st.Error.Render("not read: "+r.Err.Error())
	}
	var b strings.Builder
	b.WriteString(name)
	for _, k := range shown {
		i := indexOf(s.m.Frontends, k)
		for _, c := range r.Cells[i] {
			b.WriteString(cellText(a.st, c))
		}
	}
	return b.String()
}

func indexOf(keys []behavior.Key, k behavior.Key) int {
	for i := range keys {
		if keys[i] == k {
			return i
		}
	}
	return -1
}

// cellText is one cell, padded to cellWidth, coloured by what it says.
func cellText(st Styles, c survey.Cell) string {
	var text string
	style := st.Forward
	switch {
	case c.Drift:
		text, style = "DRIFT", st.Drift
	case c.Pending:
		text, style = "wait", st.Dim
	case c.Missing:
		text, style = "-", st.Dim
	case c.Verdict == behavior.Forward:
		text = fmt.Sprintf("→%d", c.Backends)
	case c.Verdict == behavior.Reject:
		text, style = "reject", st.Reject
	case c.Verdict == behavior.Drop:
		text, style = "drop", st.Drop
	default:
		text, style = "none", st.Unhandled
	}
	return style.Render(text) + strings.Repeat(" ", max(cellWidth-len([]rune(text)), 1))
}

func classLabel(c behavior.SourceClass) string {
	if c == behavior.FromExternal {
		return "out"
	}
	return string(c)
}

// frontendLabel names a frontend shortly: its address, or the NodePort.
func frontendLabel(k behavior.Key) string {
	if k.Kind == behavior.NodePort {
		return fmt.Sprintf("NodePort %d/%s", k.Port, k.Protocol)
	}
	return k.Addr()
}

// fitLines pads s to h lines.
func fitLines(s string, h int) string {
	n := strings.Count(s, "\n") + 1
	if n < h {
		s += strings.Repeat("\n", h-n)
	}
	return s
}
