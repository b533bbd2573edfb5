package conntrack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
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

// TestDumpVersusConntrackCLI compares Dump with `conntrack -L` on the same
// 100,000-entry table: wall time and memory (conntrack's max RSS; the Go
// heap's growth for Dump).
func TestDumpVersusConntrackCLI(t *testing.T) {
	if os.Getenv("SVCTRACE_BENCH_CONNTRACK") != "1" {
		t.Skip("set SVCTRACE_BENCH_CONNTRACK=1 to run (creates 100,000 conntrack entries in a test namespace)")
	}
	ns, created := benchNetns(t, "conntrack")
	t.Logf("created %d entries in %v (batched netlink, %d per datagram)", benchEntries, created.Round(time.Millisecond), createBatch)
	var rows []cmpRow
	best := func(r cmpRow) {
		for i := range rows {
			if rows[i].name == r.name {
				rows[i].wall, rows[i].mem = min(rows[i].wall, r.wall), min(rows[i].mem, r.mem)
				return
			}
		}
		rows = append(rows, r)
	}
	vips := []netip.Addr{}
	for i := range 300 {
		v, _ := benchVIP(i)
		vips = append(vips, v)
	}
	for range 3 {
		ns.do(t, func() error {
			cli, err := runCLI([]string{"conntrack", "-L"}, io.Discard)
			if err != nil {
				return err
			}
			best(cli)
			var text bytes.Buffer
			h := newHeapProbe()
			start := time.Now()
			cli2, err := runCLI([]string{"conntrack", "-L", "-o", "extended"}, &text)
			if err != nil {
				return err
			}
			if _, n, err := ParseText("conntrack -L", &text, 1); err != nil || n != benchEntries {
				return fmt.Errorf("parse conntrack -L: %d entries, %v", n, err)
			}
			h.sample()
			best(cmpRow{"conntrack -L -o extended | ParseText", time.Since(start), h.peak + cli2.mem, "CLI max RSS + Go heap growth"})
			for _, d := range []struct {
				name string
				f    Filter
				want int
			}{
				{"Dump (no filter)", Filter{}, benchEntries},
				{"Dump (udp in kernel, 300 ClusterIPs here)", Filter{Protocol: "udp", OrigDst: vips}, benchEntries * 9 / 10},
			} {
				h := newHeapProbe()
				start := time.Now()
				st, err := countDump(d.f, h)
				wall := time.Since(start)
				if err != nil || st.Passed != d.want {
					return fmt.Errorf("%s: %+v, %v", d.name, st, err)
				}
				h.sample()
				best(cmpRow{d.name, wall, h.peak, "Go heap growth (peak HeapInuse - base)"})
			}
			return nil
		})
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%-42s %12s %12s %14s %14s  %s\n", "method (best of 3)", "wall", "memory", "wall vs CLI", "mem vs CLI", "memory is")
	for _, r := range rows {
		fmt.Fprintf(&tab, "%-42s %12v %10.1fMB %13.2fx %13.2fx  %s\n", r.name, r.wall.Round(time.Microsecond),
			float64(r.mem)/1e6, float64(r.wall)/float64(rows[0].wall), float64(r.mem)/float64(rows[0].mem), r.note)
	}
	t.Log(tab.String())
}

// cmpRow is one line of TestDumpVersusConntrackCLI's table.
type cmpRow struct {
	name string
	wall time.Duration
	mem  uint64 // bytes
	note string
}

// runCLI runs argv in the calling thread's namespace, stdout to out, and
// returns its wall time and max RSS.
func runCLI(argv []string, out io.Writer) (row cmpRow, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if out == io.Discard {
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return row, err
		}
		defer devnull.Close()
		cmd.Stdout = devnull
	} else {
		cmd.Stdout = out
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return row, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
	row.wall = time.Since(start)
	row.name = strings.Join(argv, " ") + " >/dev/null"
	row.mem = uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024
	row.note = "max RSS of the conntrack process"
	if !strings.Contains(stderr.String(), fmt.Sprintf("%d flow entries", benchEntries)) {
		return row, fmt.Errorf("conntrack -L: %s", stderr.String())
	}
	return row, nil
}
