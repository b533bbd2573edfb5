//go:build linux

package iptables

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// benchmarkReadLegacy reads a node's legacy tables of so many Services ×
// 10 endpoints, loaded into a namespace of its own, from the kernel; the
// baseline, measured in the same run, is iptables-legacy-save of the same
// namespace (x-save: the read's time over the tool's).
func benchmarkReadLegacy(b *testing.B, services int) {
	ns := legacyNetns(b)
	netnstest.Nfacct(b, ns, "ct_state_invalid_dropped_pkts")
	netnstest.Run(b, ns, snapshottest.IPTablesSave(services, 10), "iptables-legacy-restore")
	start := time.Now()
	want := netnstest.Run(b, ns, "", "iptables-legacy-save")
	save := time.Since(start)
	b.ReportAllocs()
	start = time.Now()
	for b.Loop() {
		got, err := readLegacyIn(b, ns, famIPv4)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) < len(want)/2 || strings.Count(got, "\n-A ") != strings.Count(want, "\n-A ") {
			b.Fatalf("%d rules read, iptables-legacy-save shows %d", strings.Count(got, "\n-A "), strings.Count(want, "\n-A "))
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(save), "x-save")
}

func BenchmarkReadLegacy1k(b *testing.B)  { benchmarkReadLegacy(b, 1000) }
func BenchmarkReadLegacy10k(b *testing.B) { benchmarkReadLegacy(b, 10000) }

// BenchmarkLegacyPoll10k is the agent's change check of the legacy tables
// (legacyFingerprint, once a second) on a node of 10,000 Services × 10
// endpoints; the baseline, measured in the same run, is the full read of
// the same tables (x-read: the poll's time over the read's).
func BenchmarkLegacyPoll10k(b *testing.B) {
	benchmarkLegacyCheck(b, legacyFingerprint)
}

// BenchmarkLegacyDigest10k is the agent's digest of the legacy tables
// (KernelFingerprint: every entry without its counters, at each period)
// on the same node, against the same baseline.
func BenchmarkLegacyDigest10k(b *testing.B) {
	benchmarkLegacyCheck(b, func() ([]byte, error) { return Loader{}.KernelFingerprint(context.Background()) })
}

// benchmarkLegacyCheck runs check, which must answer the same while
// nothing writes the tables, in a namespace of 10,000 Services × 10
// endpoints, and reports its time over a full read's (x-read).
func benchmarkLegacyCheck(b *testing.B, check func() ([]byte, error)) {
	ns := legacyNetns(b)
	netnstest.Nfacct(b, ns, "ct_state_invalid_dropped_pkts")
	netnstest.Run(b, ns, snapshottest.IPTablesSave(10000, 10), "iptables-legacy-restore")
	start := time.Now()
	if _, err := readLegacyIn(b, ns, famIPv4); err != nil {
		b.Fatal(err)
	}
	read := time.Since(start)
	var first []byte
	b.ReportAllocs()
	start = time.Now()
	for b.Loop() {
		if err := netns.Run(filepath.Join("/run/netns", ns), func() error {
			d, err := check()
			if first == nil {
				first = d
			} else if !bytes.Equal(d, first) {
				b.Fatal("the tables changed while nothing wrote them")
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(read), "x-read")
}

// BenchmarkReadDigest10k is the agent's read of the IPv4 legacy tables
// that takes their digest too (readLegacyDigest), on the same node; the
// baseline, measured in the same run (the faster of three), is the read
// alone (x-read), which the agent made before, with a digest of its own
// (BenchmarkLegacyDigest10k) on top.
func BenchmarkReadDigest10k(b *testing.B) {
	ns := legacyNetns(b)
	netnstest.Nfacct(b, ns, "ct_state_invalid_dropped_pkts")
	netnstest.Run(b, ns, snapshottest.IPTablesSave(10000, 10), "iptables-legacy-restore")
	read := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		if _, err := readLegacyIn(b, ns, famIPv4); err != nil {
			b.Fatal(err)
		}
		read = min(read, time.Since(start))
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if err := netns.Run(filepath.Join("/run/netns", ns), func() error {
			text, sum, err := readLegacyDigest(famIPv4)
			if err == nil && (len(sum) == 0 || !strings.Contains(text, "-A KUBE-SERVICES")) {
				b.Fatalf("a read of %d bytes, a digest of %d", len(text), len(sum))
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(read), "x-read")
}
