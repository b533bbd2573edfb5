//go:build linux

package conntrack

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/conntrack/ctnetlink/ctnetlinktest"
)

// Kernel tests record their conversation with the kernel, and the
// conntrack tool's output for the same table, when SVCTRACE_RECORD=1 (see
// ctnetlink/ctnetlinktest/README.md); TestPlayback plays the recordings
// back through the same test code, without root.

// recordDir holds the recordings: NAME.rec and NAME.SLUG.txt, the output
// of the tool command SLUG names.
const recordDir = "testdata/kernel"

// noTool is the note a recording made without the conntrack tool has:
// its playback compares with the entries the test created only.
const noTool = "no conntrack tool: compared with the entries the test created only"

// recording is the recording a test writes or plays back.
type recording struct {
	name string
	// write: the test records (SVCTRACE_RECORD=1); otherwise, with
	// player set, it plays back.
	write  bool
	player *ctnetlinktest.Player
	note   []string
}

// record makes the test record ns's conversation with the kernel from
// here on when SVCTRACE_RECORD=1, as testdata/kernel/NAME.rec with a note
// that says what state the test made (state) and how. It is written when
// the test passes.
func (ns testNS) record(t *testing.T, name, state string) testNS {
	t.Helper()
	if os.Getenv("SVCTRACE_RECORD") != "1" {
		return ns
	}
	r := ctnetlinktest.NewRecorder(ctnetlink.Open)
	ns.tab = table{open: r.Open}
	ns.rec = recording{name: name, write: true}
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test failed: %s not recorded", name)
			return
		}
		note := []string{
			"made by: sudo SVCTRACE_RECORD=1 go test ./conntrack -run '^" + strings.Split(t.Name(), "/")[0] + "$'",
			"date: " + time.Now().UTC().Format(time.DateOnly),
			"kernel: " + strings.TrimSpace(output("uname", "-r")),
			"state: " + state,
		}
		if v := output("conntrack", "--version"); v != "" {
			note = append(note, "tool: "+strings.TrimSpace(v))
		} else {
			note = append(note, noTool)
		}
		if err := r.Write(filepath.Join(recordDir, name+".rec"), note...); err != nil {
			t.Error(err)
		}
	})
	return ns
}

// output runs argv and returns its output, "" if it fails.
func output(argv ...string) string {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

// playback returns a testNS whose netlink calls are answered from
// testdata/kernel/NAME.rec; the test fails unless every recorded request
// is made.
func playback(t *testing.T, name string) testNS {
	t.Helper()
	p, err := ctnetlinktest.Load(filepath.Join(recordDir, name+".rec"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Done(); err != nil {
			t.Error(err)
		}
	})
	return testNS{name: "playback of " + name, tab: table{open: p.Open}, rec: recording{name: name, player: p, note: p.Note()}}
}

// tool returns the output of the shell command cmd in ns (stderr too),
// whose first word is the tool; false if the tool is not installed.
// Recording, it keeps the output as NAME.SLUG.txt; playing back, it
// returns that file.
func (ns testNS) tool(t *testing.T, slug, cmd string) (string, bool) {
	t.Helper()
	file := filepath.Join(recordDir, ns.rec.name+"."+slug+".txt")
	if ns.rec.player != nil {
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) && strings.Contains(strings.Join(ns.rec.note, "\n"), noTool) {
			return "", false
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b), true
	}
	if _, err := exec.LookPath(strings.Fields(cmd)[0]); err != nil {
		t.Logf("%s not installed: no comparison with %q", strings.Fields(cmd)[0], cmd)
		return "", false
	}
	out := ns.run(t, "sh", "-c", cmd+" 2>&1")
	if ns.rec.write {
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out, true
}
