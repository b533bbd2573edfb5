package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The node agent at rest (issue 37): on the benchmark's node, once every Service is programmed,
// the real agent runs with the flags deploy/agent.yaml ships; over an idle window its CPU and
// resident set are read from /proc beside kube-proxy's CPU, then a rule of one Service is
// deleted in the kernel and the time until the agent's /metrics show drift is taken. The
// measuring is in benchnode_agent_test.go; what is read from /proc and the report are here.

// Goals of issue 37, for a node of goalScale Services.
const (
	goalAgentCPUAtRest    = 0.01 // of one core, averaged over the idle window
	goalAgentRSSVsDump    = 2.0  // the agent's resident set over the dump tool's peak
	goalAgentChangeSeen   = 2 * time.Second
	benchClockTicksPerSec = 100 // USER_HZ: the unit of /proc/<pid>/stat's times on Linux
)

// agentAtRest is what the agent cost on the idle node and how soon it saw a kernel change.
type agentAtRest struct {
	Args   string        // the agent's flags
	Window time.Duration // the idle window measured
	// FirstCheck is how long the agent took from its start to its first check published.
	FirstCheck time.Duration
	// CPU and ProxyCPU are the agent's and kube-proxy's CPU time over the window (user and
	// system, of the process and of the children it waited for); ProxyCPU < 0: not measured.
	CPU, ProxyCPU time.Duration
	// Checks is how many checks the agent made in the window, FullReads how many of them read
	// the node in full (the others confirmed the last one: nothing had changed).
	Checks, FullReads int
	// RSSMeanKiB and RSSMaxKiB are the mean and largest of VmRSS sampled each second over the
	// window; HWMKiB is VmHWM at its end, the peak of the agent's life (its first check's).
	RSSMeanKiB, RSSMaxKiB, HWMKiB int64
	// Edit is the kernel change made after the window, EditTook how long the command took.
	Edit     string
	EditTook time.Duration
	// Seen is from the end of the edit to the first scrape of /metrics (every 50 ms) that
	// showed drift; Noticed to the start of the check that found it, CheckTook that check's
	// time (from the agent's own metrics). Seen is 0 when drift was not seen.
	Seen, Noticed, CheckTook time.Duration
	Findings                 string // the drift the agent showed
}

func (a agentAtRest) cpuShare() float64 { return a.CPU.Seconds() / a.Window.Seconds() }

// procCPU is a process's CPU time from the text of /proc/<pid>/stat: utime, stime, cutime and
// cstime, in clock ticks of benchClockTicksPerSec.
func procCPU(stat string) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/<pid>/stat %.80q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime..cstime are fields 14 to 17.
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/<pid>/stat: %d fields after the command name, want 15 or more", len(f))
	}
	var ticks int64
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/<pid>/stat: CPU time %q: %w", s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / benchClockTicksPerSec, nil
}

// procMemKiB reads VmRSS and VmHWM (KiB) from the text of /proc/<pid>/status.
func procMemKiB(status string) (rss, hwm int64, err error) {
	var haveRSS, haveHWM bool
	for line := range strings.Lines(status) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/<pid>/status: %s %q: %w", k, strings.TrimSpace(v), err)
		}
		if k == "VmRSS" {
			rss, haveRSS = n, true
		} else {
			hwm, haveHWM = n, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, fmt.Errorf("/proc/<pid>/status has no VmRSS or VmHWM (a process that has exited?)")
	}
	return rss, hwm, nil
}

// writeAgentAtRest writes the agent-at-rest table of one mode's runs and its goals, when a run
// measured it.
func writeAgentAtRest(b *strings.Builder, rs []benchRun) {
	if !slices.ContainsFunc(rs, func(r benchRun) bool { return r.Agent != nil }) {
		return
	}
	var args string
	for _, r := range rs {
		if r.Agent != nil {
			args = r.Agent.Args
		}
	}
	fmt.Fprintf(b, "The node agent at rest (`kubectl-svctrace agent %s`, deploy/agent.yaml's flags), after its first check:\n\n", args)
	head := []string{"agent at rest"}
	for _, r := range rs {
		head = append(head, thousands(r.Services)+" Services")
	}
	benchRow(b, head)
	benchRow(b, slices.Repeat([]string{"---"}, len(head)))
	rows := []struct {
		label string
		cell  func(r benchRun, a agentAtRest) string
	}{
		{"first check published after the agent's start", func(_ benchRun, a agentAtRest) string { return formatSeconds(a.FirstCheck) }},
		{"agent's CPU over the idle window, share of one core", func(_ benchRun, a agentAtRest) string {
			return fmt.Sprintf("%s (%s in %s; %d checks, %d of them full reads)", formatShare(a.cpuShare()), formatSeconds(a.CPU), formatSeconds(a.Window), a.Checks, a.FullReads)
		}},
		{"kube-proxy's CPU over the same window", func(_ benchRun, a agentAtRest) string {
			if a.ProxyCPU < 0 {
				return "n/a"
			}
			return fmt.Sprintf("%s (%s)", formatShare(a.ProxyCPU.Seconds()/a.Window.Seconds()), formatSeconds(a.ProxyCPU))
		}},
		{"agent's CPU / kube-proxy's", func(_ benchRun, a agentAtRest) string {
			switch {
			case a.ProxyCPU < 0:
				return "n/a"
			case a.ProxyCPU == 0:
				return "kube-proxy used none"
			}
			return formatRatio(a.CPU.Seconds() / a.ProxyCPU.Seconds())
		}},
		{"agent's RSS over the window: mean, largest", func(_ benchRun, a agentAtRest) string {
			return formatMiB(a.RSSMeanKiB) + ", " + formatMiB(a.RSSMaxKiB)
		}},
		{"agent's peak RSS (VmHWM, its first check included)", func(_ benchRun, a agentAtRest) string { return formatMiB(a.HWMKiB) }},
		{"a rule deleted in the kernel: drift in /metrics after", func(_ benchRun, a agentAtRest) string {
			if a.Seen == 0 {
				return "not seen"
			}
			return fmt.Sprintf("%s (check started %s after the edit, took %s)", formatSeconds(a.Seen), formatSeconds(a.Noticed), formatSeconds(a.CheckTook))
		}},
	}
	for _, row := range rows {
		cells := []string{row.label}
		for _, r := range rs {
			if r.Agent == nil {
				cells = append(cells, "n/a")
				continue
			}
			cells = append(cells, row.cell(r, *r.Agent))
		}
		benchRow(b, cells)
	}
	b.WriteString("\n")
	head = []string{"goal (issue 37)", "target"}
	for _, r := range rs {
		head = append(head, thousands(r.Services)+" Services")
	}
	benchRow(b, head)
	benchRow(b, slices.Repeat([]string{"---"}, len(head)))
	goals := []struct {
		name, target string
		cell         func(r benchRun, a agentAtRest) (v, limit float64, format func(float64) string, ok bool)
	}{
		{"agent's CPU at rest, averaged", "≤ " + formatShare(goalAgentCPUAtRest) + " of one core",
			func(_ benchRun, a agentAtRest) (float64, float64, func(float64) string, bool) {
				return a.cpuShare(), goalAgentCPUAtRest, formatShare, a.Window > 0
			}},
		{"agent's RSS at rest (largest in the window) vs the dump's peak RSS", "≤ " + formatRatio(goalAgentRSSVsDump),
			func(r benchRun, a agentAtRest) (float64, float64, func(float64) string, bool) {
				d, ok := r.result(stepDump)
				return float64(a.RSSMaxKiB) / float64(d.MaxRSSKiB), goalAgentRSSVsDump, formatRatio, ok && d.MaxRSSKiB > 0
			}},
		{"agent's peak RSS (VmHWM) vs the dump's peak RSS", "≤ " + formatRatio(goalAgentRSSVsDump),
			func(r benchRun, a agentAtRest) (float64, float64, func(float64) string, bool) {
				d, ok := r.result(stepDump)
				return float64(a.HWMKiB) / float64(d.MaxRSSKiB), goalAgentRSSVsDump, formatRatio, ok && d.MaxRSSKiB > 0
			}},
		{"a kernel change seen (drift in /metrics)", fmt.Sprintf("≤ ~%s", formatSeconds(goalAgentChangeSeen)),
			func(_ benchRun, a agentAtRest) (float64, float64, func(float64) string, bool) {
				return float64(a.Seen), float64(goalAgentChangeSeen), func(f float64) string { return formatSeconds(time.Duration(f)) }, a.Seen > 0
			}},
	}
	for _, g := range goals {
		cells := []string{g.name + " (at " + shortCount(goalScale) + ")", g.target}
		for _, r := range rs {
			if r.Agent == nil {
				cells = append(cells, "n/a")
				continue
			}
			v, lim, format, ok := g.cell(r, *r.Agent)
			switch {
			case !ok:
				cells = append(cells, "n/a")
			case r.Services < goalScale:
				cells = append(cells, format(v)+" (reference)")
			default:
				cells = append(cells, benchVerdict(v, lim, format))
			}
		}
		benchRow(b, cells)
	}
	for _, r := range rs {
		if r.Agent != nil && r.Agent.Edit != "" {
			fmt.Fprintf(b, "\n%s Services: the edit was %s (%s); the agent showed %s.\n", thousands(r.Services), r.Agent.Edit,
				formatSeconds(r.Agent.EditTook), r.Agent.Findings)
		}
	}
}

// agentAtRestMethod says how the agent at rest is measured.
const agentAtRestMethod = `The agent at rest: kubectl-svctrace agent in node1's namespace with deploy/agent.yaml's flags
and GOMEMLIMIT (its memory limit), started once the commands above were measured and kube-proxy
was idle; the window starts once its first check is published. CPU is utime+stime (and its
waited-for children's) from /proc/<pid>/stat at the window's start and end, the same for
kube-proxy (the lab's process, a child of the test in node1's namespace); RSS is VmRSS sampled
each second and VmHWM at the end, from /proc/<pid>/status. Then, kube-proxy still running but
idle (it resyncs only on a change, or after an hour; its sync count is checked unchanged), one
rule of one Service is deleted in the kernel, and /metrics is scraped every 50 ms until it shows
drift; the check that found it is read from svctrace_last_check_timestamp_seconds and
svctrace_last_check_duration_seconds.
`

// formatShare writes a share of one core as a percentage.
func formatShare(f float64) string {
	p := 100 * f
	switch {
	case p < 0.1:
		return fmt.Sprintf("%.3f%%", p)
	case p < 10:
		return fmt.Sprintf("%.2f%%", p)
	}
	return fmt.Sprintf("%.1f%%", p)
}

// driftSeries is a series of svctrace_drift_findings in a scrape.
var driftSeries = regexp.MustCompile(`(?m)^svctrace_drift_findings\{finding="([^"]+)"\} (\S+)$`)

// driftFindings lists the drift series of a scrape, as finding=count.
func driftFindings(metrics string) string {
	var out []string
	for _, m := range driftSeries.FindAllStringSubmatch(metrics, -1) {
		if m[2] != "0" {
			out = append(out, m[1]+" "+m[2])
		}
	}
	if len(out) == 0 {
		return "no drift series"
	}
	return strings.Join(out, ", ")
}
