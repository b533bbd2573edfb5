package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key the UI answers, in one place: the help line and the
// full help (?) are made from it.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Left, Right                             key.Binding
	Open, Back                              key.Binding
	Filter, Sort, AllNamespaces             key.Binding
	Findings, Connections, Trace            key.Binding
	Refresh, Copy, Help, Quit               key.Binding
	// Keys of one screen's moments: unfolding a path, typing a filter,
	// filling the trace form (where every other key is text, so only
	// Ctrl-C leaves).
	Unfold, KeepFilter, ClearFilter      key.Binding
	NextField, PrevField, RunTrace, Edit key.Binding
	StopEditing, QuitTyping              key.Binding
}

func newKeyMap() keyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Up:            b("↑/k", "up", "up", "k"),
		Down:          b("↓/j", "down", "down", "j"),
		PageUp:        b("pgup/ctrl+b", "page up", "pgup", "ctrl+b"),
		PageDown:      b("pgdn/ctrl+f", "page down", "pgdown", "ctrl+f", " "),
		Top:           b("g/home", "first", "g", "home"),
		Bottom:        b("G/end", "last", "G", "end"),
		Left:          b("←/h", "scroll left", "left", "h"),
		Right:         b("→/l", "scroll right", "right", "l"),
		Open:          b("enter", "open", "enter"),
		Back:          b("esc", "back", "esc", "backspace"),
		Filter:        b("/", "filter", "/"),
		Sort:          b("s", "sort", "s"),
		AllNamespaces: b("a", "all namespaces", "a"),
		Findings:      b("f", "findings", "f"),
		Connections:   b("c", "connections", "c"),
		Trace:         b("t", "trace", "t"),
		Refresh:       b("r", "re-read", "r"),
		Copy:          b("y", "copy", "y"),
		Help:          b("?", "help", "?"),
		Quit:          b("q", "quit", "q", "ctrl+c"),
		Unfold:        b("enter", "rules", "enter"),
		KeepFilter:    b("enter", "keep the filter", "enter"),
		ClearFilter:   b("esc", "clear it", "esc"),
		NextField:     b("tab/↓", "next field", "tab", "down"),
		PrevField:     b("shift+tab/↑", "previous field", "shift+tab", "up"),
		RunTrace:      b("enter", "trace", "enter"),
		Edit:          b("/", "edit the packet", "/"),
		StopEditing:   b("esc", "stop editing", "esc"),
		QuitTyping:    b("ctrl+c", "quit", "ctrl+c"),
	}
}
