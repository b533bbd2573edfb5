package tui

import tea "charm.land/bubbletea/v2"

func isQuit(m tea.Msg) bool {
	_, ok := m.(tea.QuitMsg)
	return ok
}
