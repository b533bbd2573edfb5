//go:build linux

package nftables

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink/nfnetlinktest"
)

// recordDir holds the recordings of the kernel's netlink conversations
// that TestReadKernelRecorded plays back, each with the `nft -j list
// ruleset` of the same state.
const recordDir = "testdata/kernel"

// cachedCase is the case also recorded as two reads with an ElementCache.
const cachedCase = "kube-proxy v1.36.3"

// recordFile is the base of a case's files in recordDir.
func recordFile(name string) string {
	return filepath.Join(recordDir, strings.NewReplacer(" ", "-", "/", "-").Replace(name))
}

// recordKernel (SVCTRACE_RECORD=1) reads the namespace through a
// recorder and writes the conversation, with nft -j's dump of the same
// state, for TestReadKernelRecorded; from says what was loaded.
func recordKernel(t *testing.T, ns, name, from string) {
	t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	json := inNetns(t, ns, "", "nft", "-j", "list", "ruleset")
	base := recordFile(name)
	if err := os.WriteFile(base+".nft.json", []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	note := recordNote(t, name, from)
	rec := nfnetlinktest.Record(nfnetlink.NetNS(f.Fd()))
	if _, err := readNetlink(rec, nil, nil); err != nil {
		t.Fatal(err)
	}
	writeRecording(t, base+".rec", rec, append(note, "read: ReadNetlink, once"))
	if name != cachedCase {
		return
	}
	rec = nfnetlinktest.Record(nfnetlink.NetNS(f.Fd()))
	cache := NewElementCache()
	for range 2 {
		if _, err := readNetlinkCached(rec, cache); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Reused() == 0 {
		t.Fatal("the second read took no set from the cache")
	}
	writeRecording(t, base+".cached.rec", rec, append(note,
		fmt.Sprintf("read: ReadNetlinkCached twice with one ElementCache (the second took %d sets from it)", cache.Reused())))
}

// readNetlinkCached is ReadNetlinkCached over d.
func readNetlinkCached(d nfnetlink.Dialer, cache *ElementCache) (*Ruleset, error) {
	return readNetlink(d, cache, nil)
}

func writeRecording(t *testing.T, path string, rec *nfnetlinktest.Recorder, note []string) {
	t.Helper()
	if err := rec.Recording(note...).Write(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", path)
}

// recordNote names what made a recording: the kernel, the tools, the
// ruleset.
func recordNote(t *testing.T, name, from string) []string {
	t.Helper()
	out := func(argv ...string) string {
		b, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		return strings.TrimSpace(string(b))
	}
	return []string{
		"nf_tables netlink conversation of the nftables plane's reader (plugins/nftables readNetlink)",
		"made by: sudo SVCTRACE_RECORD=1 go test ./plugins/nftables -run 'TestReadKernelAsNft'",
		"case: " + name,
		"ruleset: " + from,
		"kernel: " + out("uname", "-r") + " " + runtime.GOARCH,
		"nft: " + out("nft", "--version"),
		"iptables-nft-restore: " + out("iptables-nft-restore", "--version"),
		"compared with: " + filepath.Base(recordFile(name)) + ".nft.json (nft -j list ruleset of the same state)",
	}
}
