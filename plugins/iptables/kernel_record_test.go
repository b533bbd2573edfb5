//go:build linux

package iptables

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
	"github.com/svctrace/svctrace/plugins/iptables/xtables/xtablestest"
)

// recordDir is where the root tests write recordings, and TestReplayLegacy
// reads them.
const recordDir = "testdata/kernel"

// recording says whether the root tests record (SVCTRACE_RECORD=1).
func recording() bool { return os.Getenv("SVCTRACE_RECORD") == "1" }

// readLegacyRecorded reads the namespace's legacy tables of a family as
// ReadLegacy does; under SVCTRACE_RECORD=1 through a recorder, whose
// recording it returns (nil otherwise).
func readLegacyRecorded(t testing.TB, ns, family string) (string, *kernelrec.Recording, error) {
	t.Helper()
	if !recording() {
		text, err := readLegacyIn(t, ns, family)
		return text, nil, err
	}
	fam := xtFamilies[family]
	var text string
	var rec *kernelrec.Recording
	err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		k, err := xtables.Open(fam.xt)
		if err != nil {
			return err
		}
		defer k.Close()
		r := xtablestest.Record(fam.xt, k)
		text, err = readLegacy(r, fam, nil)
		rec = r.Recording()
		return err
	})
	return text, rec, err
}

// writeRecording writes rec as testdata/kernel/NAME.rec, with a note of
// the kernel, the tool and what was loaded (lines), and the tool's output
// of the same state as NAME.save.
func writeRecording(t testing.TB, rec *kernelrec.Recording, name, save, family string, lines ...string) {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	tool := "iptables-legacy-save"
	if family == famIPv6 {
		tool = "ip6tables-legacy-save"
	}
	version, err := exec.Command(tool, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", tool, err)
	}
	rec.Note = append([]string{
		"x_tables getsockopt conversation of the legacy " + family + " reader (plugins/iptables.readLegacy), see plugins/iptables/xtables/xtablestest",
		"made by: sudo SVCTRACE_RECORD=1 go test ./plugins/iptables -run '" + t.Name() + "'",
		"kernel: " + unix.ByteSliceToString(u.Release[:]),
		"tool: " + strings.TrimSpace(string(version)),
		"family: " + family,
	}, lines...)
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(recordDir, name)
	if err := rec.Write(base + ".rec"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".save", []byte(save), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s.rec", base)
}
