// The frame around the screens: the breadcrumb and the age of the data
// above, the status and help lines below.

package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

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
