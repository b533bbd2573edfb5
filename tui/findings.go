package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
)

// findingsScreen lists every finding of the nodes read, grouped by type
// and Service; a finding opens its Service's paths on its node, at the
// endpoint or frontend it is about.
type findingsScreen struct {
	findings []behavior.Finding
	// at maps a row to its finding (-1 for a heading).
	at   []int
	list list
	err  error
}

func newFindingsScreen() *findingsScreen { return &findingsScreen{} }

func (s *findingsScreen) crumb() string { return "Findings" }
func (s *findingsScreen) typing() bool  { return false }

func (s *findingsScreen) keys() []key.Binding {
	k := newKeyMap()
	return []key.Binding{k.Open, k.Copy}
}

func (s *findingsScreen) reload(a *App) {
	_, s.err = a.sv.Drift()
	s.findings = a.sv.Findings()
	var rows []string
	var sel []bool
	s.at = s.at[:0]
	lastType, lastSvc := "", ""
	for i, f := range s.findings {
		if f.Type != lastType {
			if lastType != "" {
				rows, sel, s.at = append(rows, ""), append(sel, false), append(s.at, -1)
			}
			rows, sel, s.at = append(rows, a.st.Drift.Render(f.Type)), append(sel, false), append(s.at, -1)
			lastType, lastSvc = f.Type, ""
		}
		if f.Service != lastSvc {
			svc := f.Service
			if svc == "" {
				svc = "(no Service)"
			}
			rows, sel, s.at = append(rows, "  "+a.st.Header.Render(svc)), append(sel, false), append(s.at, -1)
			lastSvc = f.Service
		}
		// The message wraps under the node, so all of it shows.
		msg := strings.Split(ansi.Wrap(f.Message, max(a.width-22, 20), " ,"), "\n")
		for j, line := range msg {
			if j == 0 {
				rows, sel, s.at = append(rows, fmt.Sprintf("    %-12s %s", f.Node, line)), append(sel, true), append(s.at, i)
				continue
			}
			rows, sel, s.at = append(rows, "                 "+line), append(sel, false), append(s.at, -1)
		}
	}
	s.list.set(rows, sel)
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
// a pod reaches it, else nothing (the top of the Service).
func focusOf(f behavior.Finding) string {
	if f.Endpoint == "" || len(f.Frontends) == 0 {
		return ""
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
	return s.list.view(width, height, a.st)
}
