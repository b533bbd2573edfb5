package tui

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/survey"
)

// updating: go test ./tui -update rewrites the golden files from what
// the views draw now. The flag is the one teatest's golden package
// defines, so that one -update serves both.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// loadExample reads a bundled snapshot of the lab.
func loadExample(t testing.TB, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestApp is the UI at 80×24, monochrome, on a survey of s, with its
// clock a minute and a half after the snapshot was taken.
func newTestApp(t testing.TB, s *snapshot.Snapshot, source string) *App {
	t.Helper()
	sv := survey.New(s, source, survey.Options{})
	read := sv.Read
	a := New(Options{Load: func(context.Context) (*survey.Survey, error) { return sv, nil }, Mono: true,
		Now: func() time.Time { return read.Add(90 * time.Second) }})
	a.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	_, cmd := a.Update(surveyMsg{sv: sv})
	settle(a, cmd)
	return a
}

// settle does what a program does with a command: it runs it (here,
// right away) and hands its result back, the work of background commands
// included, in batches too. Other messages (a clipboard write) are
// dropped.
func settle(a *App, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case doneMsg:
		a.Update(msg)
	case tea.BatchMsg:
		for _, c := range msg {
			settle(a, c)
		}
	}
}

// press sends keys: a name (enter, esc, tab, backspace, ctrl+c, down) or
// text typed one character at a time.
func press(a *App, keys ...string) {
	for _, k := range keys {
		for _, m := range keyMsgs(k) {
			_, cmd := a.Update(m)
			settle(a, cmd)
		}
	}
}

func keyMsgs(k string) []tea.Msg {
	special := map[string]tea.KeyPressMsg{
		"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "tab": {Code: tea.KeyTab},
		"backspace": {Code: tea.KeyBackspace}, "down": {Code: tea.KeyDown}, "up": {Code: tea.KeyUp},
		"right": {Code: tea.KeyRight}, "left": {Code: tea.KeyLeft},
		"ctrl+c": {Code: 'c', Mod: tea.ModCtrl},
	}
	if m, ok := special[k]; ok {
		return []tea.Msg{m}
	}
	var out []tea.Msg
	for _, r := range k {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}

// screenText is what the UI draws, without its escape sequences.
func screenText(a *App) string {
	return ansi.Strip(a.render())
}

// golden compares the drawn screen with testdata/NAME.golden.
func golden(t *testing.T, a *App, name string) {
	t.Helper()
	got := screenText(a)
	lines := strings.Split(got, "\n")
	if len(lines) != 24 {
		t.Errorf("%s: %d lines drawn, want 24", name, len(lines))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("%s: line %d is %d cells wide, more than 80: %q", name, i+1, w, l)
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./tui -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func isQuit(m tea.Msg) bool {
	_, ok := m.(tea.QuitMsg)
	return ok
}
