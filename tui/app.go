// Package tui is svctrace's interactive terminal UI: screens over the
// reports the CLI prints (a survey of the cluster), reached by keys, with
// a breadcrumb of where the user is. It analyses nothing itself.
package tui

import (
	"context"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

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
	// reload shows the survey a re-read brought; what takes long (a
	// node's analysis) it leaves to the command it returns.
	reload(a *App) tea.Cmd
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
	if a.sv == nil {
		return nil // the first read is under way: it reloads every screen
	}
	return s.reload(a)
}

// reloadAll shows a new survey on every screen of the stack.
func (a *App) reloadAll() tea.Cmd {
	var cmds []tea.Cmd
	for _, s := range a.stack {
		cmds = append(cmds, s.reload(a))
	}
	return tea.Batch(cmds...)
}

// doneMsg brings work done off the UI's goroutine back to it.
type doneMsg struct{ apply func(a *App) }

// background runs work off the UI's goroutine, so that a long analysis
// never blocks the keys; the function work returns is then applied on
// the UI's goroutine (it sets the result on its screen).
func background(work func() func(a *App)) tea.Cmd {
	return func() tea.Msg { return doneMsg{work()} }
}

// Update routes a message: reads and ticks to the app, keys to the app
// and then the screen on top.
func (a *App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		// Screens lay their rows out again for the new width as they draw.
		a.width, a.height = msg.Width, msg.Height
		a.help.SetWidth(msg.Width)
		return a, nil
	case doneMsg:
		msg.apply(a)
		return a, nil
	case surveyMsg:
		a.loading = false
		a.loadErr = msg.err
		var reload tea.Cmd
		if msg.err == nil {
			a.sv = msg.sv
			reload = a.reloadAll()
		}
		a.gen++
		var next tea.Cmd
		if a.opt.Every > 0 {
			gen := a.gen
			next = tea.Tick(a.opt.Every, func(time.Time) tea.Msg { return tickMsg{gen} })
		}
		return a, tea.Batch(reload, next)
	case tickMsg:
		if msg.gen != a.gen {
			return a, nil // a read since has scheduled its own
		}
		return a, a.startLoad()
	case rereadMsg:
		return a, a.startLoad()
	case updateMsg:
		a.sv = msg.sv
		return a, a.reloadAll()
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
