//go:build linux

package iptables

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// legacyNetns makes a network namespace for the test, removed when it ends
// (it fails under CI=true, and skips elsewhere, without root or the
// legacy tools).
func legacyNetns(t testing.TB) string {
	t.Helper()
	return netnstest.New(t, "ipt", "iptables-legacy-restore", "iptables-legacy-save", "ip6tables-legacy-restore", "ip6tables-legacy-save")
}

// readLegacyIn reads the namespace's legacy tables of a family.
func readLegacyIn(t testing.TB, ns, family string) (string, error) {
	t.Helper()
	var text string
	err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		var err error
		text, err = ReadLegacy(family)
		return err
	})
	return text, err
}

// withoutComments drops a dump's # lines (the tools' dates).
func withoutComments(s string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// legacyCase is a ruleset loaded with the family's legacy restore. Under
// SVCTRACE_RECORD=1 a case with a record name writes what the kernel
// answered the reader to testdata/kernel/<record>.rec (from where),
// with iptables-legacy-save's output beside it (TestReplayLegacy plays
// them back).
type legacyCase struct{ family, text, record, from string }

// legacyCases are rulesets loaded with the family's legacy restore and
// read both ways: kube-proxy's own, captured from a real kube-proxy, and
// hand-written ones for the forms it does not write.
func legacyCases(t *testing.T) map[string]legacyCase {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// nfacct objects are not in the namespace: their matches go (the
	// forms make theirs).
	nfacct := regexp.MustCompile(` -m nfacct --nfacct-name +[a-z_]+`)
	const kpFile, kp6File = "../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt", "testdata/ipv6/node1.ip6tables-save.txt"
	kp := nfacct.ReplaceAllString(read(kpFile), "")
	return map[string]legacyCase{
		"kube-proxy v1.36.3": {famIPv4, kp, "kube-proxy-v1.36.3-node1-ipv4",
			"a real kube-proxy v1.36.3's (" + kpFile + "), its nfacct matches left out"},
		"kube-proxy v1.36.3 IPv6": {famIPv6, read(kp6File), "kube-proxy-v1.36.3-node1-ipv6",
			"a real kube-proxy v1.36.3's mapped to IPv6 (" + kp6File + ", see testdata/ipv6/README.md)"},
		// Large enough to be printed in two halves at once, its entries
		// given back as they are printed (printTable).
		"generated, 1,000 Services": {famIPv4, nfacct.ReplaceAllString(snapshottest.IPTablesSave(1000, 10), ""), "", ""},
		"forms IPv4":                {famIPv4, read("testdata/kernel-forms.rules"), "forms-ipv4", "testdata/kernel-forms.rules"},
		"forms IPv6":                {famIPv6, read("testdata/kernel-forms6.rules"), "forms-ipv6", "testdata/kernel-forms6.rules"},
		"empty":                     {famIPv4, "", "empty-ipv4", ""},
	}
}

// TestReadLegacyAsSave: the legacy reader prints each ruleset exactly as
// iptables-legacy-save does, line for line, and the parser reads the same
// from both.
func TestReadLegacyAsSave(t *testing.T) {
	for name, c := range legacyCases(t) {
		t.Run(name, func(t *testing.T) {
			ns := legacyNetns(t)
			restore, save := "iptables-legacy-restore", "iptables-legacy-save"
			if c.family == famIPv6 {
				restore, save = "ip6tables-legacy-restore", "ip6tables-legacy-save"
			}
			if strings.Contains(c.text, "nfacct") {
				netnstest.Nfacct(t, ns, "svct_one", "svct_two")
			}
			if c.text != "" {
				netnstest.Run(t, ns, c.text, restore)
			}
			// Packets through the chains, so that their policies count.
			sendLoopback(t, ns, c.family)
			saved := netnstest.Run(t, ns, "", save)
			want := withoutComments(saved)
			got, rec, err := readLegacyRecorded(t, ns, c.family)
			if err != nil {
				t.Fatal(err)
			}
			if withoutComments(got) != want {
				diffLines(t, withoutComments(got), want)
			}
			if rec != nil && c.record != "" && !t.Failed() {
				loaded := "ruleset: " + c.from + ", loaded with " + restore
				if c.text == "" {
					loaded = "ruleset: none loaded"
				}
				writeRecording(t, rec, c.record, saved, c.family, loaded+", then 3 UDP packets to the loopback address",
					"save: "+c.record+".save is "+save+"'s output of the same state")
			}
			if c.text != "" && !strings.Contains(want, "-A ") {
				t.Fatalf("iptables-legacy-save shows no rules:\n%s", want)
			}
			if c.text != "" && !movedCounter.MatchString(want) {
				t.Errorf("no policy counted a packet: the counters were not compared:\n%s", want)
			}
		})
	}
}

// movedCounter is a chain's policy counter that counted something.
var movedCounter = regexp.MustCompile(`\[[1-9][0-9]*:[0-9]+\]`)

// diffLines reports the lines that differ.
func diffLines(t *testing.T, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\nread: %q\nsave: %q", i+1, gl, wl)
			return
		}
	}
}

// TestReadLegacyRefuses: what the reader does not print is an error
// wrapping ErrNotTranslated that names the table, chain and match. Under
// SVCTRACE_RECORD=1 it records each (testdata/kernel/refused-N-ipv4.rec).
func TestReadLegacyRefuses(t *testing.T) {
	for i, rule := range []string{
		"-A INPUT -m length --length 0:100 -j ACCEPT",
		"-A INPUT -m conntrack --ctorigdst 10.0.0.1 -j ACCEPT",
		"-A INPUT -j NFLOG --nflog-group 1",
	} {
		ns := legacyNetns(t)
		netnstest.Run(t, ns, "*filter\n:INPUT ACCEPT [0:0]\n"+rule+"\nCOMMIT\n", "iptables-legacy-restore")
		_, rec, err := readLegacyRecorded(t, ns, famIPv4)
		if rec != nil && errors.Is(err, ErrNotTranslated) {
			writeRecording(t, rec, fmt.Sprintf("refused-%d-ipv4", i+1), netnstest.Run(t, ns, "", "iptables-legacy-save"), famIPv4,
				"ruleset: *filter with the one rule "+rule+", loaded with iptables-legacy-restore",
				"refused: the reader must refuse it (ErrNotTranslated, table filter, chain INPUT)")
		}
		if !errors.Is(err, ErrNotTranslated) {
			t.Errorf("%s: got %v, want an error wrapping ErrNotTranslated", rule, err)
			continue
		}
		if !strings.Contains(err.Error(), "table filter") || !strings.Contains(err.Error(), "chain INPUT") {
			t.Errorf("%s: error %q does not name the table and chain", rule, err)
		}
	}
}

// sendLoopback sends a few UDP packets to the namespace's own loopback
// address (traffic that stays in the namespace).
func sendLoopback(t *testing.T, ns, family string) {
	t.Helper()
	netnstest.Run(t, ns, "", "ip", "link", "set", "lo", "up")
	network, from, addr := "udp4", "127.0.0.1:0", "127.0.0.1:9"
	if family == famIPv6 {
		network, from, addr = "udp6", "[::1]:0", "[::1]:9"
	}
	err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		// Unconnected, so that the port unreachable each packet gets
		// back does not fail the next send.
		c, err := net.ListenPacket(network, from)
		to, rerr := net.ResolveUDPAddr(network, addr)
		if err != nil || rerr != nil {
			return errors.Join(err, rerr)
		}
		defer c.Close()
		// A rule may drop them on the way (the forms' MASQUERADE out of
		// lo, a QUEUE without a reader): the chains before it counted
		// them all the same.
		for range 3 {
			c.WriteTo([]byte("svctrace"), to)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sending in %s: %v", ns, err)
	}
}
