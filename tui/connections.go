package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/svctrace/svctrace/analysis"
)

// connectionsScreen is the conntrack entries of a Service on a node, by
// frontend and backend, stale ones marked.
type connectionsScreen struct {
	ref   analysis.ServiceRef
	node  string
	flows []analysis.Flow
	read  bool
	err   error
	at    []int
	list  list
	gen   int
	busy  bool
}

func newConnectionsScreen(ref analysis.ServiceRef, node string) *connectionsScreen {
	return &connectionsScreen{ref: ref, node: node}
}

func (s *connectionsScreen) crumb() string { return "connections on " + s.node }
func (s *connectionsScreen) typing() bool  { return false }
func (s *connectionsScreen) keys(k keyMap) []key.Binding {
	return []key.Binding{k.Copy}
}

// reload reads the node's connections of the Service off the UI's
// goroutine (the node may not be analysed yet).
func (s *connectionsScreen) reload(a *App) tea.Cmd {
	s.gen++
	gen, sv := s.gen, a.sv
	s.busy = true
	return background(func() func(*App) {
		flows, read, err := sv.Flows(s.ref, s.node)
		return func(a *App) {
			if gen == s.gen {
				s.flows, s.read, s.err, s.busy = flows, read, err, false
				s.layout(a)
			}
		}
	})
}

func (s *connectionsScreen) layout(a *App) {
	var rows []string
	var sel []bool
	s.at = s.at[:0]
	last := ""
	for i, f := range s.flows {
		backend := f.Backend
		if backend == "" {
			backend = "(not translated)"
		}
		group := f.Frontend.Addr() + " → " + backend
		if group != last {
			n := 0
			for _, g := range s.flows {
				if g.Frontend == f.Frontend && g.Backend == f.Backend {
					n++
				}
			}
			rows, sel, s.at = append(rows, a.st.Header.Render(fmt.Sprintf("%s  (%d)", group, n))), append(sel, false), append(s.at, -1)
			last = group
		}
		status := fmt.Sprintf("%-12s", f.Status)
		switch f.Status {
		case analysis.FlowStale, analysis.FlowUntranslated:
			status = a.st.Stale.Render(strings.ToUpper(status))
		case analysis.FlowOK:
			status = a.st.OK.Render(status)
		default:
			status = a.st.Dim.Render(status)
		}
		line := "  " + status + " from " + f.Client
		if f.Reason != "" {
			line += a.st.Dim.Render("  " + f.Reason)
		}
		rows, sel, s.at = append(rows, line), append(sel, true), append(s.at, i)
	}
	s.list.set(rows, sel)
}

func (s *connectionsScreen) update(a *App, msg tea.Msg) tea.Cmd {
	s.list.update(msg, a.keys)
	return nil
}

func (s *connectionsScreen) selection() string {
	if s.list.cursor < len(s.at) && s.at[s.list.cursor] >= 0 {
		return s.flows[s.at[s.list.cursor]].Text
	}
	return ""
}

func (s *connectionsScreen) view(a *App, width, height int) string {
	switch {
	case s.busy && s.flows == nil:
		return a.spin.View() + " reading the connections…"
	case s.err != nil:
		return a.st.Error.Render(s.err.Error())
	case !s.read:
		return a.st.Dim.Render("the state of node " + s.node + " holds no conntrack table")
	case len(s.flows) == 0:
		return a.st.Dim.Render("no connection to " + s.ref.String() + " on " + s.node)
	}
	return s.list.view(width, height, a.st)
}
