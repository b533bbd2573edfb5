//go:build linux

package conntrack

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

const benchEntries = 100_000

// benchVIP returns ClusterIP frontend i (0..299) and its port.
func benchVIP(i int) (netip.Addr, uint16) {
	return netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), [...]uint16{53, 80, 443, 8080}[i%4]
}

// benchTable returns the benchmark table: 90% udp, 10% tcp ESTABLISHED,
// all DNATed from 300 ClusterIP:port frontends to 3,000 pods (10 each),
// from 2 clients with unique source ports.
func benchTable() []Entry {
	entries := make([]Entry, 0, benchEntries)
	for i := range benchEntries {
		fe := i % 300
		vip, port := benchVIP(fe)
		pod := fe*10 + (i/300)%10
		podIP := netip.AddrFrom4([4]byte{10, 244, byte(pod >> 8), byte(pod)})
		client := netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i/50_000)})
		sport := uint16(10_000 + i%50_000)
		e := Entry{Protocol: "udp", Timeout: 3600, Assured: i%2 == 0,
			Orig:  Tuple{Src: client, Dst: vip, SrcPort: sport, DstPort: port},
			Reply: Tuple{Src: podIP, Dst: client, SrcPort: port + 10_000, DstPort: sport}}
		if i%10 == 0 {
			e.Protocol, e.State, e.Assured = "tcp", "ESTABLISHED", true
		}
		entries = append(entries, e)
	}
	return entries
}

// benchNetns makes a namespace holding the benchmark table.
func benchNetns(t testing.TB, tools ...string) (testNS, time.Duration) {
	ns := newNetns(t, tools...)
	start := time.Now()
	ns.create(t, benchTable()...)
	took := time.Since(start)
	ns.do(t, func() error {
		n, err := Count(context.Background())
		if err == nil && n != benchEntries {
			err = fmt.Errorf("table has %d entries, want %d", n, benchEntries)
		}
		return err
	})
	return ns, took
}

// heapProbe tracks the peak growth of HeapInuse over a baseline.
type heapProbe struct{ base, peak uint64 }

func newHeapProbe() *heapProbe {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapProbe{base: ms.HeapInuse}
}

func (h *heapProbe) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > h.base && ms.HeapInuse-h.base > h.peak {
		h.peak = ms.HeapInuse - h.base
	}
}

// countDump dumps with f, counting entries and sampling the heap every
// 5,000 entries.
func countDump(f Filter, h *heapProbe) (DumpStats, error) {
	n := 0
	return Dump(context.Background(), f, func(Entry) error {
		if n++; n%5000 == 0 && h != nil {
			h.sample()
		}
		return nil
	})
}

func BenchmarkDump100k(b *testing.B) {
	ns, _ := benchNetns(b)
	vip, port := benchVIP(7) // i%300 == 7: 334 entries, all udp
	var vips []netip.Addr
	for i := range 300 {
		v, _ := benchVIP(i)
		vips = append(vips, v)
	}
	for _, c := range []struct {
		name string
		f    Filter
		want int
	}{
		{"all", Filter{}, benchEntries},
		{"kernel-filter-1-vip", Filter{Protocol: "udp", OrigDst: []netip.Addr{vip}, OrigDstPorts: []uint16{port}}, benchEntries/300 + 1},
		{"user-filter-300-vips", Filter{Protocol: "udp", OrigDst: vips}, benchEntries * 9 / 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			ns.do(b, func() error {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					h := newHeapProbe()
					b.StartTimer()
					st, err := countDump(c.f, h)
					if err != nil {
						return err
					}
					if st.Passed != c.want {
						return fmt.Errorf("%d entries passed, want %d", st.Passed, c.want)
					}
					b.StopTimer()
					h.sample()
					peak = max(peak, h.peak)
					b.StartTimer()
				}
				return nil
			})
			b.ReportMetric(float64(peak), "peak-heap-B")
		})
	}
}

func BenchmarkParseText100k(b *testing.B) {
	var buf bytes.Buffer
	for _, e := range benchTable() {
		buf.WriteString(Format(e))
		buf.WriteByte('\n')
	}
	text := buf.Bytes()
	for _, limit := range []int{0, 1} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_, n, err := ParseText("bench", bytes.NewReader(text), limit)
				if err != nil || n != benchEntries {
					b.Fatalf("%d entries, %v", n, err)
				}
			}
		})
	}
}
