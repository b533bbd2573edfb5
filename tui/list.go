package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// list is a scrolling list of pre-rendered rows with a cursor: the body
// of every screen. Rows that are not selectable (headings, rules under a
// backend) are skipped by the cursor.
type list struct {
	rows       []string
	selectable []bool
	cursor     int
	offset     int
	height     int
}

// set replaces the rows, keeping the cursor where it was if it can.
func (l *list) set(rows []string, selectable []bool) {
	l.rows, l.selectable = rows, selectable
	if l.cursor >= len(rows) {
		l.cursor = len(rows) - 1
	}
	if l.cursor < 0 {
		l.cursor = 0
	}
	if !l.canSelect(l.cursor) {
		l.move(1)
		if !l.canSelect(l.cursor) {
			l.move(-1)
		}
	}
}

func (l *list) canSelect(i int) bool {
	if i < 0 || i >= len(l.rows) {
		return false
	}
	return l.selectable == nil || l.selectable[i]
}

// move goes n selectable rows down (up when negative), stopping at the
// ends.
func (l *list) move(n int) {
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for ; n > 0; n-- {
		i := l.cursor + step
		for i >= 0 && i < len(l.rows) && !l.canSelect(i) {
			i += step
		}
		if !l.canSelect(i) {
			return
		}
		l.cursor = i
	}
}

// update moves the cursor for the navigation keys; it reports whether the
// key was one of them.
func (l *list) update(msg tea.Msg, k keyMap) bool {
	switch msg := msg.(type) {
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelUp {
			l.move(-3)
		} else if msg.Button == tea.MouseWheelDown {
			l.move(3)
		}
		return true
	case tea.KeyPressMsg:
		page := max(l.height-1, 1)
		switch {
		case key.Matches(msg, k.Up):
			l.move(-1)
		case key.Matches(msg, k.Down):
			l.move(1)
		case key.Matches(msg, k.PageUp):
			l.move(-page)
		case key.Matches(msg, k.PageDown):
			l.move(page)
		case key.Matches(msg, k.Top):
			l.cursor = 0
			l.set(l.rows, l.selectable)
		case key.Matches(msg, k.Bottom):
			l.cursor = len(l.rows) - 1
			l.move(0)
			for !l.canSelect(l.cursor) && l.cursor > 0 {
				l.cursor--
			}
		default:
			return false
		}
		return true
	}
	return false
}

// view draws height rows of the list, width wide, scrolled so the cursor
// shows; the selected row is marked with a caret and the selected style.
func (l *list) view(width, height int, st Styles) string {
	l.height = height
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+height {
		l.offset = l.cursor - height + 1
	}
	if l.offset > max(len(l.rows)-height, 0) {
		l.offset = max(len(l.rows)-height, 0)
	}
	var b strings.Builder
	for i := l.offset; i < l.offset+height; i++ {
		if i > l.offset {
			b.WriteByte('\n')
		}
		if i >= len(l.rows) {
			continue
		}
		row := ansi.Truncate(l.rows[i], width-2, "…")
		if i == l.cursor && l.canSelect(i) {
			pad := max(width-2-ansi.StringWidth(row), 0)
			b.WriteString("▸ " + st.Selected.Render(ansi.Strip(row)+strings.Repeat(" ", pad)))
			continue
		}
		b.WriteString("  " + row)
	}
	return b.String()
}
