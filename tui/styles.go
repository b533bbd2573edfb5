package tui

import (
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// Styles are every style the UI draws with, in one place. A monochrome
// set (NO_COLOR, --no-color) tells things apart by weight and reverse
// video alone; the selected row is also marked with a caret, so it shows
// on any terminal.
type Styles struct {
	Title, Crumb, Header, Selected, Dim, Status, Error, Help lipgloss.Style
	Forward, Reject, Drop, Unhandled, Drift, Stale, OK       lipgloss.Style
}

// NewStyles returns the colour styles, or the monochrome ones.
func NewStyles(mono bool) Styles {
	base := lipgloss.NewStyle()
	if mono {
		return Styles{
			Title: base.Bold(true), Crumb: base.Bold(true), Header: base.Underline(true),
			Selected: base.Reverse(true), Dim: base, Status: base, Error: base.Bold(true), Help: base,
			Forward: base, Reject: base.Bold(true), Drop: base.Bold(true), Unhandled: base,
			Drift: base.Bold(true).Reverse(true), Stale: base.Bold(true), OK: base,
		}
	}
	c := lipgloss.Color
	return Styles{
		Title:     base.Bold(true).Foreground(c("12")),
		Crumb:     base.Bold(true).Foreground(c("12")),
		Header:    base.Bold(true).Foreground(c("7")),
		Selected:  base.Reverse(true),
		Dim:       base.Foreground(c("8")),
		Status:    base.Foreground(c("8")),
		Error:     base.Bold(true).Foreground(c("9")),
		Help:      base.Foreground(c("8")),
		Forward:   base.Foreground(c("10")),
		Reject:    base.Foreground(c("11")),
		Drop:      base.Foreground(c("11")),
		Unhandled: base.Foreground(c("8")),
		Drift:     base.Bold(true).Foreground(c("9")),
		Stale:     base.Bold(true).Foreground(c("9")),
		OK:        base.Foreground(c("10")),
	}
}

// steadyInput is a text input whose cursor does not blink: a blinking
// cursor redraws the screen twice a second for nothing, and captures of
// the screen would differ from one moment to the next.
func steadyInput() textinput.Model {
	f := textinput.New()
	st := f.Styles()
	st.Cursor.Blink = false
	f.SetStyles(st)
	return f
}
