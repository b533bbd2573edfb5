package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

// findingsScreen lists every finding of the nodes read, grouped by type
// and Service; a finding opens its Service's paths on its node, at the
// endpoint or frontend it is about.
type findingsScreen struct {
	findings []behavior.Finding
	// at maps a row to its finding (-1 for a heading); rows and sel are
	// the rows being laid out.
	at   []int
	rows []string
	sel  []bool
	// drift is how many of findings are drift (the rest are pending);
	// width, the width they were laid out for.
	drift int
	width int
	list  list
	err   error
}

func newFindingsScreen() *findingsScreen { return &findingsScreen{} }

func (s *findingsScreen) crumb() string { return "Findings" }
func (s *findingsScreen) typing() bool  { return false }

func (s *findingsScreen) keys(k keyMap) []key.Binding {
	return []key.Binding{k.Open, k.Copy}
}

func (s *findingsScreen) reload(a *App) tea.Cmd {
	_, s.err = a.sv.Drift()
	drift, pending := a.sv.Findings(), a.sv.Pending()
	s.findings = append(append([]behavior.Finding(nil), drift...), pending...)
	s.drift = len(drift)
	s.layout(a, max(a.width, 20))
	return nil
}

// layout lays the findings out for a width: messages wrap to it.
func (s *findingsScreen) layout(a *App, width int) {
	s.width = width
	s.rows, s.sel, s.at = nil, nil, s.at[:0]
	s.group(a, 0, s.drift, a.st.Drift, "")
	s.group(a, s.drift, len(s.findings), a.st.Dim, "pending, kube-proxy has not synced the change yet: ")
	s.list.set(s.rows, s.sel)
}

// group adds the findings from..to, by type and Service; a finding's
// message wraps under its node, so all of it shows.
func (s *findingsScreen) group(a *App, from, to int, style lipgloss.Style, prefix string) {
	add := func(row string, finding int) {
		s.rows, s.sel, s.at = append(s.rows, row), append(s.sel, finding >= 0), append(s.at, finding)
	}
	lastType, lastSvc := "", ""
	for i := from; i < to; i++ {
		f := s.findings[i]
		if f.Type != lastType {
			if len(s.rows) > 0 {
				add("", -1)
			}
			add(style.Render(prefix+f.Type), -1)
			lastType, lastSvc = f.Type, ""
		}
		if f.Service != lastSvc {
			svc := f.Service
			if svc == "" {
				svc = "(no Service)"
			}
			add("  "+a.st.Header.Render(svc), -1)
			lastSvc = f.Service
		}
		for j, line := range strings.Split(ansi.Wrap(wording.Printable(f.Message), max(s.width-22, 20), " ,"), "\n") {
			if j == 0 {
				add(fmt.Sprintf("    %-12s %s", f.Node, line), i)
				continue
			}
			add("                 "+line, -1)
		}
	}
}

func (s *findingsScreen) selected() (behavior.Finding, bool) {
	if s.list.cursor >= len(s.at) || s.at[s.list.cursor] < 0 {
		return behavior.Finding{}, false
	}
	return s.findings[s.at[s.list.cursor]], true
}

func (s *findingsScreen) update(a *App, msg tea.Msg) tea.Cmd {
	if s.list.update(msg, a.keys) {
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || !key.Matches(k, a.keys.Open) {
		return nil
	}
	f, ok := s.selected()
	if !ok || f.Service == "" {
		return nil
	}
	ref, err := analysis.ParseServiceRef(f.Service, "")
	if err != nil {
		a.message = err.Error()
		return nil
	}
	ref.Port = ""
	p := newPathsScreen(ref, f.Node)
	p.focus, p.named = focusOf(f), true
	return a.push(p)
}

// focusOf is the paths row a finding points at: the backend it names, as
// the first class it names reaches it (unfolded, so its rules show), else
// the frontend it names, else nothing (the top of the Service).
func focusOf(f behavior.Finding) string {
	if len(f.Frontends) == 0 {
		return ""
	}
	if f.Endpoint == "" {
		return frontendAnchor(f.Frontends[0])
	}
	class := behavior.FromPod
	if len(f.Sources) > 0 {
		class = behavior.SourceClass(f.Sources[0])
	}
	return f.Frontends[0] + "|" + string(class) + "|" + f.Endpoint
}

func (s *findingsScreen) selection() string {
	if f, ok := s.selected(); ok {
		if len(f.Rules) > 0 {
			return f.Rules[0]
		}
		return f.Message
	}
	return ""
}

func (s *findingsScreen) view(a *App, width, height int) string {
	if s.err != nil {
		return a.st.Error.Render("no drift check: " + s.err.Error())
	}
	if len(s.findings) == 0 {
		return a.st.OK.Render("no drift") + a.st.Dim.Render(" on the nodes read")
	}
	if width != s.width {
		s.layout(a, width)
	}
	if len(a.sv.Findings()) == 0 {
		return a.st.OK.Render("no drift") + a.st.Dim.Render(" yet, only differences that wait for kube-proxy's sync") + "\n" + s.list.view(width, height-1, a.st)
	}
	return s.list.view(width, height, a.st)
}
