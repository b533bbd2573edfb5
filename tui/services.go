package tui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/svctrace/svctrace/survey"
)

// Sort orders of the Services screen, in the order s cycles through them.
var serviceSorts = []string{"name", "findings", "endpoints"}

// servicesScreen lists the Services: filter as you type, sort, one
// namespace or all.
type servicesScreen struct {
	namespace string // "" is every namespace
	filter    textinput.Model
	filtering bool
	sortBy    int
	all       []survey.Service
	shown     []survey.Service
	list      list
}

func newServicesScreen(namespace string) *servicesScreen {
	f := steadyInput()
	f.Prompt = "/"
	f.Placeholder = "filter"
	return &servicesScreen{namespace: namespace, filter: f}
}

func (s *servicesScreen) crumb() string {
	if s.namespace == "" {
		return "Services (all namespaces)"
	}
	return "Services in " + s.namespace
}

func (s *servicesScreen) typing() bool { return s.filtering }

func (s *servicesScreen) keys(k keyMap) []key.Binding {
	if s.filtering {
		return []key.Binding{k.KeepFilter, k.ClearFilter}
	}
	return []key.Binding{k.Open, k.Filter, k.Sort, k.AllNamespaces, k.Findings, k.Trace}
}

func (s *servicesScreen) reload(a *App) tea.Cmd {
	s.all = a.sv.Services(s.namespace)
	s.apply()
	return nil
}

// apply filters and sorts the rows: the filter matches namespace/name,
// type and frontends, case-insensitively.
func (s *servicesScreen) apply() {
	q := strings.ToLower(strings.TrimLeft(s.filter.Value(), " "))
	s.shown = s.shown[:0]
	for _, r := range s.all {
		text := strings.ToLower(r.Namespace + "/" + r.Name + " " + r.Type + " " + strings.Join(r.Frontends, " "))
		if q == "" || strings.Contains(text, q) {
			s.shown = append(s.shown, r)
		}
	}
	switch serviceSorts[s.sortBy] {
	case "findings":
		sort.SliceStable(s.shown, func(i, j int) bool { return s.shown[i].Findings > s.shown[j].Findings })
	case "endpoints":
		sort.SliceStable(s.shown, func(i, j int) bool { return s.shown[i].Total > s.shown[j].Total })
	}
	rows := make([]string, len(s.shown))
	for i, r := range s.shown {
		rows[i] = s.row(r)
	}
	s.list.set(rows, nil)
}

func (s *servicesScreen) row(r survey.Service) string {
	fe := "-"
	if len(r.Frontends) > 0 {
		fe = r.Frontends[0]
		if len(r.Frontends) > 1 {
			fe += fmt.Sprintf(" +%d", len(r.Frontends)-1)
		}
	}
	eps := fmt.Sprintf("%d/%d/%d", r.Ready, r.Serving, r.Total)
	drift := ""
	if r.Findings > 0 {
		drift = fmt.Sprintf("%d: %s", r.Findings, strings.Join(r.Nodes, ","))
	} else if r.Pending > 0 {
		drift = "wait"
	}
	return fmt.Sprintf("%-*s %-12s %-22s %-8s %s", nameWidth, cut(r.Namespace+"/"+r.Name, nameWidth), r.Type, cut(fe, 21), eps, drift)
}

const nameWidth = 22

func (s *servicesScreen) header() string {
	return fmt.Sprintf("  %-*s %-12s %-22s %-8s %s", nameWidth, "SERVICE", "TYPE", "FRONTENDS", "ENDPNTS", "DRIFT")
}

func (s *servicesScreen) update(a *App, msg tea.Msg) tea.Cmd {
	if s.filtering {
		if k, ok := msg.(tea.KeyPressMsg); ok && (key.Matches(k, a.keys.KeepFilter) || key.Matches(k, a.keys.ClearFilter)) {
			s.filtering = false
			s.filter.Blur()
			if key.Matches(k, a.keys.ClearFilter) {
				s.filter.SetValue("")
			}
			s.apply()
			return nil
		}
		var cmd tea.Cmd
		s.filter, cmd = s.filter.Update(msg)
		s.apply()
		return cmd
	}
	if s.list.update(msg, a.keys) {
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, a.keys.Filter):
		s.filtering = true
		return s.filter.Focus()
	case key.Matches(k, a.keys.Sort):
		s.sortBy = (s.sortBy + 1) % len(serviceSorts)
		s.apply()
		a.message = "sorted by " + serviceSorts[s.sortBy]
	case key.Matches(k, a.keys.AllNamespaces):
		if s.namespace != "" {
			s.namespace = ""
		} else if r, ok := s.selected(); ok {
			s.namespace = r.Namespace
		}
		return s.reload(a)
	case key.Matches(k, a.keys.Open):
		if r, ok := s.selected(); ok {
			return a.push(newMatrixScreen(r.Ref()))
		}
	}
	return nil
}

func (s *servicesScreen) selected() (survey.Service, bool) {
	if s.list.cursor < 0 || s.list.cursor >= len(s.shown) {
		return survey.Service{}, false
	}
	return s.shown[s.list.cursor], true
}

func (s *servicesScreen) selection() string {
	if r, ok := s.selected(); ok {
		return r.Namespace + "/" + r.Name
	}
	return ""
}

func (s *servicesScreen) view(a *App, width, height int) string {
	top := a.st.Header.Render(cut(s.header(), width))
	if s.filtering || s.filter.Value() != "" {
		top = s.filter.View() + a.st.Dim.Render(fmt.Sprintf("  %d of %d", len(s.shown), len(s.all))) + "\n" + top
	}
	lines := strings.Count(top, "\n") + 1
	if len(s.shown) == 0 {
		msg := "no Service"
		if s.filter.Value() != "" {
			msg += " matches " + fmt.Sprintf("%q", s.filter.Value())
		}
		return top + "\n" + a.st.Dim.Render("  "+msg)
	}
	return top + "\n" + s.list.view(width, height-lines, a.st)
}

// cut shortens s to n cells, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
