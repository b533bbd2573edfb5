//go:build linux && bench

package conntrack

// The comparison with conntrack -L is a measurement, not a check: it is
// built only with -tags bench (hack/bench.sh runs it as root), so that it
// neither runs nor skips in the test suite.

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDumpVersusConntrackCLI compares Dump with `conntrack -L` on the same
// 100,000-entry table: wall time and memory (conntrack's max RSS; the Go
// heap's growth for Dump).
func TestDumpVersusConntrackCLI(t *testing.T) {
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
