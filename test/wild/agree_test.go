package wild

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/trace"
)

// TestExplainAgreesWithTrace: on every dump of the corpus that imports,
// each frontend's answer per source class is what a trace of the same
// packet (the same probe source) gives: the same backends with the same
// shares, and no forward where the trace drops, rejects, or cannot know.
// One walk, one answer (issue 33).
func TestExplainAgreesWithTrace(t *testing.T) {
	dumps, err := dumpFiles()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := readEntries()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dumps {
		e := entries[d]
		a, err := analyse(d, e != nil && e.Excerpt)
		if err != nil {
			continue // refused: nothing to contradict
		}
		space := a.ProbeSpace()
		for _, f := range a.Observed.Frontends {
			probes := space.Choose(behavior.ParsePrefixes(f.SourceRanges))
			dst := f.Key.IP
			if dst == "" {
				dst = behavior.ChooseProbes(nil, nil, nil).Node.String()
				if len(a.NodeIPs) > 0 {
					dst = a.NodeIPs[0].String()
				}
			}
			for class, src := range map[behavior.SourceClass]netip.Addr{behavior.FromPod: probes.Pod, behavior.FromNode: probes.Node, behavior.FromExternal: probes.External} {
				checked++
				if why := disagreement(a, f.Outcomes[class], class, src, dst, f.Key); why != "" {
					t.Errorf("%s: %s from %s: %s", d, f.Key, class, why)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d answers compared: the corpus is not being read", checked)
	}
}

// disagreement says how explain's outcome o differs from a trace of the
// packet from src to dst ("" when they agree).
func disagreement(a *analysis.NodeAnalysis, o behavior.Outcome, class behavior.SourceClass, src netip.Addr, dst string, k behavior.Key) string {
	r, err := trace.Trace(a, nil, trace.PacketSpec{Src: src.String(), Dst: fmt.Sprintf("%s:%d/%s", dst, k.Port, strings.ToLower(k.Protocol)), From: string(class)})
	if err != nil {
		return "trace: " + err.Error()
	}
	got := map[string]float64{} // what the trace reaches, by backend
	verdicts := map[string]float64{}
	for _, b := range r.Branches {
		verdicts[b.Verdict] += b.Probability
		switch b.Verdict {
		case "forward":
			got[b.DNAT] += b.Probability
		case "redirect":
			got["local:"+strings.TrimPrefix(b.DNAT, "local port ")+" (userspace proxy)"] += b.Probability
		case "unknown":
			if chain, ok := strings.CutPrefix(b.Reason, "goes on in "); ok {
				_, addr, _ := strings.Cut(b.Reason, "names its endpoint ")
				addr = strings.TrimSuffix(addr, ")")
				chain, _, _ = strings.Cut(chain, ",")
				if addr != "" {
					got[dataplane.MissingLabel(chain, addr)] += b.Probability
					continue
				}
				if strings.HasPrefix(chain, "KUBE-SEP-") || strings.HasPrefix(chain, "endpoint-") {
					got["? via "+chain+" (chain not in the dump)"] += b.Probability
				} else {
					got["? not known ("+chain+" goes on in rules the input does not show)"] += b.Probability
				}
			}
		}
	}
	want := map[string]float64{}
	for _, b := range o.Backends {
		want[b.Endpoint] += b.Probability
	}
	switch o.Verdict {
	case behavior.Forward:
		if !sameShares(want, got) {
			return fmt.Sprintf("explain forwards to %s, the trace reaches %s (%v)", shares(want), shares(got), verdicts)
		}
	case behavior.Reject, behavior.Drop:
		if verdicts["forward"] > 0 || verdicts[string(o.Verdict)] == 0 {
			return fmt.Sprintf("explain says %s, the trace gives %v", o.Verdict, verdicts)
		}
	case behavior.Unknown:
		if verdicts["forward"] > 0 || verdicts["unknown"] == 0 {
			return fmt.Sprintf("explain says unknown, the trace gives %v", verdicts)
		}
	case behavior.Unhandled:
		if len(verdicts) != 1 || verdicts["accept"] == 0 {
			return fmt.Sprintf("explain says unhandled, the trace gives %v", verdicts)
		}
	}
	return ""
}

func sameShares(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if math.Abs(b[k]-v) > 1e-4 {
			return false
		}
	}
	return true
}

func shares(m map[string]float64) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%.4g", k, v))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// readEntries reads expect.yaml, by dump.
func readEntries() (map[string]*entry, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil {
		return nil, err
	}
	var entries []entry
	if err := yaml.UnmarshalStrict(raw, &entries); err != nil {
		return nil, fmt.Errorf("expect.yaml: %w", err)
	}
	out := map[string]*entry{}
	for i := range entries {
		out[entries[i].Dump] = &entries[i]
	}
	return out, nil
}
