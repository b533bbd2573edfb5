//go:build linux

package iptables

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/iptables/xtables/xtablestest"
)

// recordedCase is a recording of testdata/kernel: its family (by the
// name's -ipv4 or -ipv6), the conversation, and the tool's output of the
// same state.
type recordedCase struct {
	name, family string
	rec          *kernelrec.Recording
	save         string
}

// recordedCases reads the recordings the root tests made (see
// kernel_record_test.go).
func recordedCases(t *testing.T) []recordedCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(recordDir, "*.rec"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recordings in %s (%v)", recordDir, err)
	}
	var cases []recordedCase
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".rec")
		c := recordedCase{name: name}
		switch {
		case strings.HasSuffix(name, "-ipv4"):
			c.family = famIPv4
		case strings.HasSuffix(name, "-ipv6"):
			c.family = famIPv6
		default:
			t.Fatalf("%s: the name says no family (-ipv4, -ipv6)", p)
		}
		if c.rec, err = kernelrec.Read(p); err != nil {
			t.Fatal(err)
		}
		save, err := os.ReadFile(strings.TrimSuffix(p, ".rec") + ".save")
		if err != nil {
			t.Fatal(err)
		}
		c.save = string(save)
		cases = append(cases, c)
	}
	return cases
}

// recorded is the recording named.
func recorded(t *testing.T, name string) recordedCase {
	t.Helper()
	for _, c := range recordedCases(t) {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no recording %s in %s", name, recordDir)
	return recordedCase{}
}

// replay reads a recording's tables as ReadLegacy reads the kernel's.
func replay(c recordedCase, rec *kernelrec.Recording) (string, *xtablestest.Player, error) {
	fam := xtFamilies[c.family]
	p := xtablestest.Play(fam.xt, rec)
	text, err := readLegacy(p, fam, nil)
	return text, p, err
}

// TestReplayLegacy plays each recording of a real kernel's tables to the
// reader, without root: it prints them as iptables-legacy-save printed
// the same state, line for line (TestReadLegacyAsSave's comparison), or
// refuses what TestReadLegacyRefuses has it refuse; and it asks every
// recorded question.
func TestReplayLegacy(t *testing.T) {
	families, rules := map[string]bool{}, 0
	for _, c := range recordedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got, p, err := replay(c, c.rec)
			if strings.HasPrefix(c.name, "refused-") {
				if !errors.Is(err, ErrNotTranslated) || !strings.Contains(err.Error(), "table filter") || !strings.Contains(err.Error(), "chain INPUT") {
					t.Errorf("got %v, want an error wrapping ErrNotTranslated naming table filter, chain INPUT", err)
				}
				if err := p.Done(); err != nil {
					t.Error(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Done(); err != nil {
				t.Error(err)
			}
			if want := withoutComments(c.save); withoutComments(got) != want {
				diffLines(t, withoutComments(got), want)
			}
			families[c.family] = true
			rules += strings.Count(c.save, "\n-A ")
		})
	}
	// Not vacuous: rules of both families were compared.
	if !families[famIPv4] || !families[famIPv6] || rules < 100 {
		t.Errorf("the recordings compared %d rules, families %v", rules, families)
	}
}

// kubeProxyRecording is the recording the error tests spoil.
const kubeProxyRecording = "kube-proxy-v1.36.3-node1-ipv4"

// spoiled is a deep copy of a recording to spoil.
func spoiled(rec *kernelrec.Recording) *kernelrec.Recording {
	out := &kernelrec.Recording{Note: rec.Note}
	for _, e := range rec.Exchanges {
		c := kernelrec.Exchange{Request: bytes.Clone(e.Request), Err: e.Err}
		for _, r := range e.Replies {
			c.Replies = append(c.Replies, bytes.Clone(r))
		}
		out.Exchanges = append(out.Exchanges, c)
	}
	return out
}

// getEntriesAt is the index of the recording's first GET_ENTRIES answer.
func getEntriesAt(t *testing.T, rec *kernelrec.Recording) int {
	t.Helper()
	for i, e := range rec.Exchanges {
		if bytes.HasPrefix(e.Request, []byte("GET_ENTRIES ")) && e.Err == "" {
			return i
		}
	}
	t.Fatal("the recording has no GET_ENTRIES answer")
	return 0
}

// BenchmarkReplayLegacy reads the kube-proxy recording's tables (no root):
// the decoding and printing of ReadLegacy without the kernel.
func BenchmarkReplayLegacy(b *testing.B) {
	rec, err := kernelrec.Read(filepath.Join(recordDir, kubeProxyRecording+".rec"))
	if err != nil {
		b.Fatal(err)
	}
	fam := xtFamilies[famIPv4]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readLegacy(xtablestest.Play(fam.xt, rec), fam, nil); err != nil {
			b.Fatal(err)
		}
	}
}
