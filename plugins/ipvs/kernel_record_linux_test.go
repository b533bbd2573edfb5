//go:build linux

package ipvs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// recording says whether this run writes recordings (SVCTRACE_RECORD=1).
func recording() bool { return os.Getenv("SVCTRACE_RECORD") == "1" }

// saveRecording writes a recorder's conversation as NAME.rec and the
// tool's output for the same state as NAME.txt, when recording.
func saveRecording(t *testing.T, name string, r *ipvsnetlinktest.Recorder, state, tool, out string) {
	t.Helper()
	if !recording() {
		return
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	version := func(tool string) string {
		flag := map[string]string{"ipvsadm": "-v"}[tool]
		if flag == "" {
			flag = "-V"
		}
		b, _ := exec.Command(tool, flag).CombinedOutput()
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, tool) && !strings.Contains(l, "FATAL") {
				return strings.TrimSpace(l)
			}
		}
		return "no version: " + strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	how := "sudo SVCTRACE_RECORD=1 go test ./plugins/ipvs -run '" + t.Name() + "'"
	if h := os.Getenv("SVCTRACE_RECORD_HOW"); h != "" {
		how = h // the script that ran the test elsewhere (record-vm.sh)
	}
	note := []string{
		"kernel " + strings.TrimSpace(string(kernel)),
		"made by: " + how,
		"state: " + state,
		"tool: " + tool + " (" + version(strings.Fields(tool)[0]) + "), its output in " + name + ".txt",
	}
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Recording(note...).Write(filepath.Join(recordDir, name+".rec")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recordDir, name+".txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDummyKernelRecorded reads kube-ipvs0's addresses from the real
// kernel, in namespaces of the test's (no interface; one without
// addresses; one with the render's addresses and IPv6 ones), and
// compares the reader's listing with ip -o addr show's; with
// SVCTRACE_RECORD=1 it keeps both, for TestDummyReplay.
func TestDummyKernelRecorded(t *testing.T) {
	netnstest.Need(t)
	target := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	var bind []string
	for _, a := range target.Addrs {
		bind = append(bind, "ip addr add "+a.String()+" dev "+Dummy)
	}
	bind = append(bind, "ip addr add fd00:10:96::a/128 dev "+Dummy+" nodad", "ip addr add 2001:db8::5/128 dev "+Dummy+" nodad")
	// The host's kernel has no dummy interfaces: a bridge stands for
	// kube-ipvs0 (the addresses are what is read).
	for _, c := range []struct{ name, state, setup string }{
		{"absent", "no kube-ipvs0", ""},
		{"empty", "kube-ipvs0 (a bridge) without addresses", "ip link add " + Dummy + " type bridge"},
		{"render", "kube-ipvs0 (a bridge) with the addresses of the render of testView (render_test.go) and two IPv6 ones added nodad",
			"ip link add " + Dummy + " type bridge && " + strings.Join(bind, " && ")},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := netnstest.New(t, "ipvsrec")
			if c.setup != "" {
				netnstest.Run(t, ns, "", "sh", "-c", c.setup)
			}
			rec := ipvsnetlinktest.NewRecorder(ipvsnetlink.Kernel{})
			var got string
			var readErr error
			if err := netns.Run("/run/netns/"+ns, func() error {
				d, err := readDummyFrom(rec)
				got, readErr = d.Text, err
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			tool, code := netnstest.Exec(t, ns, "", "ip", "-o", "addr", "show", "dev", Dummy)
			if c.setup == "" {
				if code == 0 || !errors.Is(readErr, dataplane.ErrNotInKernel) {
					t.Fatalf("no %s: ip said %q (exit %d), the reader %v", Dummy, tool, code, readErr)
				}
				tool = ""
			} else if readErr != nil || code != 0 {
				t.Fatalf("reading %s: %v; ip: %s", Dummy, readErr, tool)
			}
			if want := withoutAddrFlags(tool); got != want {
				t.Fatalf("the reader's listing differs from ip's:\n%s", netnstest.LineDiff(want, got))
			}
			saveRecording(t, "kube-ipvs0-"+c.name, rec, c.state, "ip -o addr show dev "+Dummy, tool)
		})
	}
}

// TestIPVSKernelRecorded reads the IPVS table from the real kernel, in a
// namespace of the test's, and compares its listing with ipvsadm -Ln's:
// with no IPVS (the host's kernel: nothing to compare, the reader finds
// no family), and, where the kernel has IPVS (the VM lab's), with the
// render of testView's virtual and real servers written by the repair's
// writer. With SVCTRACE_RECORD=1 it keeps the recordings, for
// TestIPVSReplay.
func TestIPVSKernelRecorded(t *testing.T) {
	ns := netnstest.New(t, "ipvsrec")
	read := func(rec *ipvsnetlinktest.Recorder) (*Table, error) {
		var tab *Table
		var readErr error
		if err := netns.Run("/run/netns/"+ns, func() error {
			tab, readErr = readTable(rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return tab, readErr
	}
	rec := ipvsnetlinktest.NewRecorder(ipvsnetlink.Kernel{})
	tab, err := read(rec)
	if err != nil {
		t.Fatal(err)
	}
	if tab == nil {
		if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
			t.Fatal("the kernel has IPVS, the reader found none")
		}
		out, code := netnstest.Exec(t, ns, "", "ipvsadm", "-Ln")
		if code == 0 {
			t.Fatalf("ipvsadm -Ln listed a kernel without IPVS:\n%s", out)
		}
		state := "a kernel without IPVS (no module ip_vs); ipvsadm -Ln: " + strings.Join(strings.Fields(out), " ")
		saveRecording(t, "ipvs-absent", rec, state, "ipvsadm -Ln", "")
		// What a kernel without IPVS answers is checked; the table
		// itself is recorded in the VM lab's kernel (see
		// ipvsnetlinktest/README.md).
		t.Log("this kernel has no IPVS: checked the reader finds none")
		return
	}
	recordIPVSTable(t, ns, read)
}
