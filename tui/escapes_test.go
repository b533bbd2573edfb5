package tui

import (
	"strings"
	"testing"
)

// TestControlCharactersEscaped: a rule comment holding terminal
// controls (an OSC retitling the window, a bell, a clear screen, C1's
// one-byte CSI, a bidi override) shows escaped in the trace and paths
// views, and none of it is drawn raw.
func TestControlCharactersEscaped(t *testing.T) {
	const name = "lab-iptables-v1.36.3.snapshot.yaml"
	s := loadExample(t, name)
	const comment = `"default/dns:dns-tcp cluster IP"`
	evil := "\"default/dns:dns-tcp cluster IP\x1b]0;owned\x07\x1b[2J\u009b31m\u202e\""
	edited := 0
	for i := range s.Nodes {
		for j := range s.Nodes[i].Dumps {
			if d := &s.Nodes[i].Dumps[j]; d.Collector == "iptables-save" && strings.Contains(d.Text, comment) {
				d.Text, d.Index = strings.ReplaceAll(d.Text, comment, evil), nil
				edited++
			}
		}
	}
	if edited == 0 {
		t.Fatalf("no %s in %s", comment, name)
	}
	a := newTestApp(t, s, name)
	press(a, "t", "10.244.1.20", "tab", "10.96.25.237:53", "enter")
	checkEscaped(t, "trace", a)
	b := newTestApp(t, s, name)
	press(b, "/", "default/dns ", "enter", "enter", "enter", "j", "j", "enter")
	checkEscaped(t, "paths", b)
}

func checkEscaped(t *testing.T, view string, a *App) {
	t.Helper()
	raw := a.render()
	for _, c := range []string{"\x1b]0;owned", "\x07", "\x1b[2J", "\u009b", "\u202e"} {
		if strings.Contains(raw, c) {
			t.Errorf("%s: drawn raw: %q", view, c)
		}
	}
	if got := screenText(a); !strings.Contains(got, `IP\x1b]0;owned`) {
		t.Errorf("%s: the comment is not shown escaped:\n%s", view, got)
	}
}
