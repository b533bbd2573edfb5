package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/svctrace/svctrace/snapshot"
)

const nftSnapshot = "lab-nftables-v1.36.3.snapshot.yaml"

// broken is the nftables lab snapshot after the API dropped one endpoint
// of default/web (10.244.1.11): both nodes still send to it, which drift
// reports as a stale endpoint on each.
func broken(t testing.TB) *snapshot.Snapshot {
	s := loadExample(t, nftSnapshot)
	for i := range s.Cluster.EndpointSlices {
		es := &s.Cluster.EndpointSlices[i]
		if es.Namespace != "default" || es.Labels["kubernetes.io/service-name"] != "web" {
			continue
		}
		for j, ep := range es.Endpoints {
			if ep.Addresses[0] == "10.244.1.11" {
				es.Endpoints = append(es.Endpoints[:j], es.Endpoints[j+1:]...)
				return s
			}
		}
	}
	t.Fatal("default/web has no endpoint 10.244.1.11 in the snapshot")
	return nil
}

// withConnections adds conntrack entries of default/web to node1's table:
// two to live endpoints and one to the endpoint the API dropped.
func withConnections(t testing.TB, s *snapshot.Snapshot) *snapshot.Snapshot {
	entries := []string{
		"ipv4     2 tcp      6 431999 ESTABLISHED src=10.244.1.20 dst=10.96.2.225 sport=41000 dport=80 src=10.244.1.10 dst=10.244.1.20 sport=8080 dport=41000 [ASSURED] mark=0 use=1",
		"ipv4     2 tcp      6 431999 ESTABLISHED src=10.244.1.21 dst=10.96.2.225 sport=41001 dport=80 src=10.244.2.10 dst=10.244.1.21 sport=8080 dport=41001 [ASSURED] mark=0 use=1",
		"ipv4     2 tcp      6 431999 ESTABLISHED src=10.244.1.22 dst=10.96.2.225 sport=41002 dport=80 src=10.244.1.11 dst=10.244.1.22 sport=8080 dport=41002 [ASSURED] mark=0 use=1",
	}
	for i := range s.Nodes[0].Dumps {
		d := &s.Nodes[0].Dumps[i]
		if d.Collector == snapshot.CollectorConntrack {
			d.Text += strings.Join(entries, "\n") + "\n"
			return s
		}
	}
	t.Fatal("node1 of the snapshot holds no conntrack table")
	return nil
}

func TestServicesView(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	golden(t, a, "services")
	press(a, "/", "web")
	golden(t, a, "services-filtering")
	press(a, "enter", "j")
	golden(t, a, "services-filtered")
	// Sorting by findings puts the Service that drifts first.
	b := newTestApp(t, broken(t), "broken")
	press(b, "s")
	golden(t, b, "services-by-findings")
}

func TestMatrixView(t *testing.T) {
	a := newTestApp(t, broken(t), "broken")
	press(a, "/", "default/web-lb", "enter", "enter")
	golden(t, a, "matrix")
	press(a, "l")
	golden(t, a, "matrix-scrolled")
	b := newTestApp(t, broken(t), "broken")
	press(b, "/", "default/web ", "enter", "enter")
	if got := screenText(b); !strings.Contains(got, "DRIFT") {
		t.Errorf("default/web, whose endpoint the API dropped, shows no drift:\n%s", got)
	}
	golden(t, b, "matrix-drift")
}

func TestPathsView(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(a, "/", "default/web ", "enter", "enter", "enter")
	golden(t, a, "paths")
	// Enter is offered only where it unfolds something: not on a
	// frontend's heading or a forward's line, on a backend.
	for _, step := range []struct {
		keys  []string
		enter bool
	}{{nil, false}, {[]string{"j"}, false}, {[]string{"j"}, true}} {
		press(a, step.keys...)
		if got := screenText(a); strings.Contains(got, "enter rules") != step.enter {
			t.Errorf("after %v, the footer offers enter: %v, want %v:\n%s", step.keys, !step.enter, step.enter, got)
		}
	}
	press(a, "enter")
	got := screenText(a)
	if !strings.Contains(got, "dnat ip to") {
		t.Errorf("an expanded backend does not show its DNAT rule:\n%s", got)
	}
	golden(t, a, "paths-expanded")
	press(a, "enter")
	if strings.Contains(screenText(a), "dnat ip to") {
		t.Error("enter again does not fold the backend")
	}
}

func TestFindingsView(t *testing.T) {
	a := newTestApp(t, broken(t), "broken")
	press(a, "f")
	golden(t, a, "findings")
	// A finding opens its Service's paths on its node, at its endpoint,
	// unfolded.
	press(a, "enter")
	got := screenText(a)
	if !strings.Contains(got, "default/web on node1") || !strings.Contains(got, "▸") {
		t.Fatalf("the finding did not open default/web on node1:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "▸") && !strings.Contains(l, "10.244.1.11:8080") {
			t.Errorf("the cursor is on %q, not on the stale endpoint 10.244.1.11:8080", l)
		}
	}
	if !strings.Contains(got, "ClusterIP 10.96.2.225:80/TCP  default/web:http  drift: StaleEndpoint") {
		t.Errorf("the drifting frontend is not marked:\n%s", got)
	}
	golden(t, a, "findings-opened")
	healthy := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(healthy, "f")
	if got := screenText(healthy); !strings.Contains(got, "no drift") {
		t.Errorf("a healthy snapshot's findings do not say no drift:\n%s", got)
	}
}

func TestConnectionsView(t *testing.T) {
	a := newTestApp(t, withConnections(t, broken(t)), "broken")
	press(a, "/", "default/web ", "enter", "enter", "c")
	got := screenText(a)
	if strings.Count(got, "STALE") != 1 {
		t.Errorf("want exactly one stale entry (to 10.244.1.11):\n%s", got)
	}
	golden(t, a, "connections")
}

// TestTraceFormEmpty: the empty fields of the trace form show their
// whole examples, not their first character, and the form says the order
// tab takes through them, as its help line says both ways.
func TestTraceFormEmpty(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(a, "t")
	got := screenText(a)
	for _, want := range []string{"source:      10.244.1.5", "destination: 10.96.0.10:53/udp",
		"tab goes node → source → destination → from (shift+tab back)", "shift+tab/↑ previous field"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the empty form:\n%s", want, got)
		}
	}
}

func TestTraceView(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(a, "t", "10.244.1.20", "tab", "10.96.2.225:80", "enter")
	ts := a.top().(*traceScreen)
	if ts.r == nil || len(ts.r.Branches) != 3 {
		t.Fatalf("want three branches, one per endpoint of default/web: %+v", ts.r)
	}
	if got := screenText(a); !strings.Contains(got, "1/3   forward to 10.244.1.10:8080 pod default/web-1") {
		t.Errorf("the first branch is not shown with its probability, backend and Pod:\n%s", got)
	}
	golden(t, a, "trace")
	press(a, "G")
	if got := screenText(a); !strings.Contains(got, "[2 : 10.244.2.10") {
		t.Errorf("the last branch does not show at the bottom:\n%s", got)
	}
	b := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(b, "t", "not-an-ip", "enter")
	if got := screenText(b); !strings.Contains(got, "not an IP address") {
		t.Errorf("a bad source is not said:\n%s", got)
	}
}

func TestHelpAndQuit(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(a, "?")
	golden(t, a, "help")
	for _, k := range []string{"?", "q"} {
		if !strings.Contains(screenText(a), k) {
			t.Errorf("the full help does not list %q", k)
		}
	}
	press(a, "j") // any key closes the help
	if strings.Contains(screenText(a), "scroll left") {
		t.Error("the full help stays open after a key")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
		// Even while typing a filter, ctrl+c leaves; q is then text.
		if k == "ctrl+c" {
			press(a, "/")
		}
		_, cmd := a.Update(keyMsgs(k)[0])
		if cmd == nil || !isQuit(cmd()) {
			t.Errorf("%s does not quit", k)
		}
	}
}

// TestColour: the colour styles mark a drifting cell in red, and the
// monochrome ones in reverse video, so both show it.
func TestColour(t *testing.T) {
	for mono, want := range map[bool]string{false: "\x1b[1;91m", true: "\x1b[1;7m"} {
		a := newTestApp(t, broken(t), "broken")
		a.st = NewStyles(mono)
		press(a, "/", "default/web ", "enter", "enter")
		got := a.render()
		if !strings.Contains(got, want+"DRIFT") {
			t.Errorf("mono=%v: DRIFT is not drawn with %q:\n%q", mono, want, ansi.Strip(got))
		}
	}
}

// TestMouseAndResize: the wheel moves the selection; a resize lays the
// screen out again at the new size, and nothing drawn is wider.
func TestMouseAndResize(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	a.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if got := a.top().selection(); got != "default/empty" {
		t.Errorf("after a wheel turn down the selection is %q, want three rows down, default/empty", got)
	}
	a.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if got := a.top().selection(); got != "default/crowded" {
		t.Errorf("after a wheel turn up the selection is %q, want default/crowded", got)
	}
	press(a, "/", "default/web ", "enter", "enter", "enter", "j", "j", "enter")
	for _, size := range [][2]int{{60, 15}, {120, 40}, {80, 24}} {
		a.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(screenText(a), "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: %d lines drawn", size[0], size[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d wide: %q", size[0], size[1], i+1, w, l)
			}
		}
		if size[1] >= 24 && !strings.Contains(screenText(a), "dnat ip to") {
			t.Errorf("%dx%d: the unfolded backend's DNAT rule is gone:\n%s", size[0], size[1], screenText(a))
		}
	}
}

// TestAnalysisOffTheUI: opening a Service on the nodes leaves their
// analysis to a command, so the screen says it is under way and keys
// still answer; its answer, come late for a screen left, changes nothing.
func TestAnalysisOffTheUI(t *testing.T) {
	a := newTestApp(t, loadExample(t, nftSnapshot), nftSnapshot)
	press(a, "/", "default/web ", "enter")
	_, cmd := a.Update(keyMsgs("enter")[0])
	if cmd == nil || !strings.Contains(screenText(a), "analysing the nodes") {
		t.Fatalf("opening a Service analyses in place:\n%s", screenText(a))
	}
	press(a, "esc")
	settle(a, cmd)
	if got := screenText(a); !strings.Contains(got, "SERVICE") || strings.Contains(got, "NODE") {
		t.Errorf("a late answer changed the screen:\n%s", got)
	}
}
