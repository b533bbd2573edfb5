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
	// Static: the data is a file, which r reads again but nothing else
	// changes; the header says when it was captured rather than its age.
	Static bool
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
	keys(k keyMap) []key.Binding
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
	// note is a lasting remark on the data (changes not watched, say).
	note string
	// gen counts the reads, so that only the newest schedules the next.
	gen    int
	ctx    context.Context
	cancel context.CancelFunc
}

type surveyMsg struct {
	sv  *survey.Survey
	err error
}

type tickMsg struct{ gen int }

// updateMsg is a survey made without a read: the API objects a watch
// brought, over the node states already read.
type updateMsg struct{ sv *survey.Survey }

type rereadMsg struct{}

type noteMsg struct{ text string }

// Updated tells the UI to show sv, made from objects a watch brought;
// send it with tea.Program.Send.
func Updated(sv *survey.Survey) tea.Msg { return updateMsg{sv} }

// Reread tells the UI to read the state again, as r does.
func Reread() tea.Msg { return rereadMsg{} }

// Note tells the UI to show a lasting remark about its data under the
// screen (that changes are not watched, for instance).
func Note(text string) tea.Msg { return noteMsg{text} }

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
		a.gen++
		var next tea.Cmd
		if a.opt.Every > 0 {
			gen := a.gen
			next = tea.Tick(a.opt.Every, func(time.Time) tea.Msg { return tickMsg{gen} })
		}
		return a, next
	case tickMsg:
		if msg.gen != a.gen {
			return a, nil // a read since has scheduled its own
		}
		return a, a.startLoad()
	case rereadMsg:
		return a, a.startLoad()
	case updateMsg:
		a.sv = msg.sv
		for _, s := range a.stack {
			s.reload(a)
		}
		return a, nil
	case noteMsg:
		a.note = msg.text
		return a, nil
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
	footer := a.footer(w)
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
		if a.opt.Static {
			when = " · captured " + a.sv.Read.UTC().Format("2006-01-02 15:04Z")
		}
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
	case a.note != "":
		return ansi.Truncate(a.st.Status.Render(a.note), w, "…")
	}
	return ""
}

// footer is the help line: the screen's own keys as far as they fit,
// then back, help and quit, which always show.
func (a *App) footer(w int) string {
	k := a.keys
	tail := []key.Binding{k.Help, k.Quit}
	if a.top().typing() {
		// Keys are text here: only Ctrl-C leaves.
		tail = []key.Binding{k.QuitTyping}
	} else if len(a.stack) > 1 {
		tail = append([]key.Binding{k.Back}, tail...)
	}
	end := a.help.ShortHelpView(tail)
	room := w - lipgloss.Width(end) - 3
	var head []key.Binding
	for _, b := range a.top().keys(k) {
		if lipgloss.Width(a.help.ShortHelpView(append(head, b))) > room {
			break
		}
		head = append(head, b)
	}
	if len(head) == 0 {
		return end
	}
	return a.help.ShortHelpView(head) + a.help.Styles.ShortSeparator.Render(" • ") + end
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
