// Package tui is svctrace's interactive terminal UI: screens over the
// reports the CLI prints (a survey of the cluster), reached by keys, with
// a breadcrumb of where the user is. It analyses nothing itself.
package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/survey"
)

// Loader reads the cluster's state again: the snapshot file, or the live
// cluster through the CLI's own reading.
type Loader func(ctx context.Context) (*survey.Survey, error)

// Options configure the UI.
type Options struct {
	Load Loader
	// Every re-reads the state this often; 0 re-reads only on demand.
	Every time.Duration
	// Mono draws without colour (NO_COLOR).
	Mono bool
	// Namespace limits the Services screen at first; empty is every
	// namespace.
	Namespace string
	// Now is the clock (tests fix it).
	Now func() time.Time
}

// screen is one component of the UI: a Services list, a Service on every
// node, its paths on one node, and so on. Screens stack: opening one
// pushes it, back pops it, and the breadcrumb shows the stack.
type screen interface {
	crumb() string
	// update handles a message meant for the screen.
	update(a *App, msg tea.Msg) tea.Cmd
	view(a *App, width, height int) string
	// keys are the screen's own keys, for the help line.
	keys() []key.Binding
	// selection is what y copies.
	selection() string
	// reload shows the survey a re-read brought.
	reload(a *App)
	// typing: the screen takes every key (a filter or a form being
	// edited), the global keys included.
	typing() bool
}

// App is the root model.
type App struct {
	opt      Options
	keys     keyMap
	st       Styles
	help     help.Model
	spin     spinner.Model
	sv       *survey.Survey
	loadErr  error
	loading  bool
	stack    []screen
	width    int
	height   int
	fullHelp bool
	message  string
	ctx      context.Context
	cancel   context.CancelFunc
}

type surveyMsg struct {
	sv  *survey.Survey
	err error
}

type tickMsg struct{}

// New makes the UI; Run (or a tea.Program) drives it.
func New(o Options) *App {
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{opt: o, keys: newKeyMap(), st: NewStyles(o.Mono), help: help.New(), spin: spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		width: 80, height: 24, ctx: ctx, cancel: cancel}
	a.help.Styles.ShortKey = a.st.Help.Bold(true)
	a.help.Styles.ShortDesc = a.st.Help
	a.help.Styles.FullKey = a.st.Help.Bold(true)
	a.help.Styles.FullDesc = a.st.Help
	a.stack = []screen{newServicesScreen(o.Namespace)}
	return a
}

// Init starts the first read.
func (a *App) Init() tea.Cmd {
	return tea.Batch(a.startLoad(), a.spin.Tick)
}

func (a *App) startLoad() tea.Cmd {
	if a.loading {
		return nil
	}
	a.loading = true
	load, ctx := a.opt.Load, a.ctx
	return func() tea.Msg {
		sv, err := load(ctx)
		return surveyMsg{sv, err}
	}
}

func (a *App) top() screen { return a.stack[len(a.stack)-1] }

// push opens a screen over the current one.
func (a *App) push(s screen) tea.Cmd {
	a.stack = append(a.stack, s)
	a.message = ""
	s.reload(a)
	return nil
}

// Update routes a message: reads and ticks to the app, keys to the app
// and then the screen on top.
func (a *App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.width, a.height = msg.Width, msg.Height
		a.help.SetWidth(msg.Width)
		if a.sv != nil {
			// Rows wrap to the width: lay them out again.
			for _, s := range a.stack {
				s.reload(a)
			}
		}
		return a, nil
	case surveyMsg:
		a.loading = false
		a.loadErr = msg.err
		if msg.err == nil {
			a.sv = msg.sv
			for _, s := range a.stack {
				s.reload(a)
			}
		}
		var next tea.Cmd
		if a.opt.Every > 0 {
			next = tea.Tick(a.opt.Every, func(time.Time) tea.Msg { return tickMsg{} })
		}
		return a, next
	case tickMsg:
		return a, a.startLoad()
	case spinner.TickMsg:
		var cmd tea.Cmd
		a.spin, cmd = a.spin.Update(msg)
		return a, cmd
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" {
			a.cancel()
			return a, tea.Quit
		}
		if a.top().typing() {
			return a, a.top().update(a, msg)
		}
		if a.fullHelp {
			a.fullHelp = false
			return a, nil
		}
		switch {
		case key.Matches(msg, a.keys.Quit):
			a.cancel()
			return a, tea.Quit
		case key.Matches(msg, a.keys.Help):
			a.fullHelp = true
			return a, nil
		case key.Matches(msg, a.keys.Back):
			if len(a.stack) > 1 {
				a.stack = a.stack[:len(a.stack)-1]
				a.message = ""
			}
			return a, nil
		case key.Matches(msg, a.keys.Refresh):
			a.message = ""
			return a, a.startLoad()
		case key.Matches(msg, a.keys.Copy):
			sel := a.top().selection()
			if sel == "" {
				return a, nil
			}
			a.message = "copied: " + sel
			return a, tea.SetClipboard(sel)
		case key.Matches(msg, a.keys.Findings):
			if _, on := a.top().(*findingsScreen); !on {
				return a, a.push(newFindingsScreen())
			}
			return a, nil
		case key.Matches(msg, a.keys.Trace):
			if _, on := a.top().(*traceScreen); !on {
				return a, a.push(newTraceScreen(a))
			}
			return a, nil
		}
	}
	return a, a.top().update(a, msg)
}

// View draws the breadcrumb, the screen, a status line and the help line.
func (a *App) View() tea.View {
	v := tea.NewView(a.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "svctrace"
	return v
}

func (a *App) render() string {
	w, h := max(a.width, 20), max(a.height, 5)
	header := a.headerLine(w)
	footer := a.help.ShortHelpView(a.shortHelp())
	status := a.statusLine(w)
	bodyH := h - 3
	var body string
	switch {
	case a.fullHelp:
		a.help.ShowAll = true
		body = a.help.FullHelpView(a.fullHelpGroups())
		a.help.ShowAll = false
	case a.sv == nil && a.loadErr != nil:
		body = a.st.Error.Render("could not read: " + a.loadErr.Error())
	case a.sv == nil:
		body = a.spin.View() + " reading…"
	default:
		body = a.top().view(a, w, bodyH)
	}
	return strings.Join([]string{header, fit(body, w, bodyH), status, ansi.Truncate(footer, w, "…")}, "\n")
}

// headerLine is the breadcrumb on the left, the source and the age of
// the data on the right.
func (a *App) headerLine(w int) string {
	var crumbs []string
	for _, s := range a.stack {
		crumbs = append(crumbs, s.crumb())
	}
	left := a.st.Title.Render("svctrace") + " › " + a.st.Crumb.Render(strings.Join(crumbs, " › "))
	var right string
	if a.sv != nil {
		// The age always shows; the source as far as room allows.
		when := " · " + age(a.opt.Now().Sub(a.sv.Read))
		if a.loading {
			when = " " + a.spin.View() + when
		}
		room := w - lipgloss.Width(left) - lipgloss.Width(when) - 2
		right = when
		if room >= 8 {
			right = ansi.TruncateLeft(a.sv.Source, max(ansi.StringWidth(a.sv.Source)-room, 0), "…") + when
		}
	}
	right = a.st.Status.Render(right)
	gap := w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return ansi.Truncate(left, w, "…")
	}
	return left + strings.Repeat(" ", gap) + right
}

func (a *App) statusLine(w int) string {
	switch {
	case a.loadErr != nil && a.sv != nil:
		return ansi.Truncate(a.st.Error.Render("re-read failed: "+a.loadErr.Error()), w, "…")
	case a.message != "":
		return ansi.Truncate(a.st.Status.Render(a.message), w, "…")
	}
	return ""
}

func (a *App) shortHelp() []key.Binding {
	k := a.keys
	out := append([]key.Binding{}, a.top().keys()...)
	if len(a.stack) > 1 {
		out = append(out, k.Back)
	}
	return append(out, k.Help, k.Quit)
}

func (a *App) fullHelpGroups() [][]key.Binding {
	k := a.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Left, k.Right},
		{k.Open, k.Back, k.Filter, k.Sort, k.AllNamespaces},
		{k.Findings, k.Connections, k.Trace, k.Refresh, k.Copy, k.Help, k.Quit},
	}
}

// fit pads or cuts s to exactly h lines of at most w cells.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// age says how old the data is, coarsely.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just read"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
