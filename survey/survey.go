// Package survey is what the interactive terminal UI shows: a cluster's
// API objects and its nodes' kernel state, read once, with the reports
// the CLI prints computed from them by the same entry points (drift,
// explain, trace). The UI asks; the survey answers; neither re-analyses
// what the other already knows.
package survey

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/settle"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/trace"
)

// Options say how a survey reads its snapshot.
type Options struct {
	// Family is the IP family analysed: IPv4 (the default) or IPv6.
	Family string
	// Unread are nodes the source could not read, with why: they are
	// shown with their error rather than left out.
	Unread []analysis.NodeFindings
	// Changed are when Services (namespace/name) last changed in the
	// API, as a watch saw it. A finding of a Service that changed after
	// its node's state was read, or less than Settle before, is pending,
	// not drift: that state may predate kube-proxy's sync of the change.
	Changed map[string]time.Time
	Settle  time.Duration
}

// Survey holds one reading of a cluster and answers the UI's questions
// about it. It is safe for concurrent use: each node is analysed once,
// on the first question about it.
type Survey struct {
	snap   *snapshot.Snapshot
	family string
	// Read is when the state was read.
	Read time.Time
	// Source says where it came from ("snapshot FILE", "live").
	Source string

	drift    *analysis.DriftReport
	driftErr error
	unread   map[string]error
	// findings are the drift findings; pending, those that wait for
	// kube-proxy's sync of a change the node's state predates.
	findings, pending []behavior.Finding

	mu       sync.Mutex
	analyses map[string]*nodeAnalysis
}

type nodeAnalysis struct {
	once sync.Once
	a    *analysis.NodeAnalysis
	err  error
}

// New surveys a snapshot: the drift of every node it holds is checked at
// once (it is what the Services screen and the findings show); each
// node's full analysis, with the rules of every path, waits for a
// question about that node.
func New(s *snapshot.Snapshot, source string, o Options) *Survey {
	if o.Family == "" {
		o.Family = "IPv4"
	}
	v := &Survey{snap: s, family: o.Family, Read: s.Metadata.CreationTimestamp, Source: source,
		analyses: map[string]*nodeAnalysis{}, unread: map[string]error{}}
	if v.Read.IsZero() {
		v.Read = time.Now()
	}
	for _, n := range o.Unread {
		v.unread[n.Node] = n.Err
	}
	if len(s.Nodes) > 0 {
		v.drift, v.driftErr = analysis.Drift(s, analysis.DriftOptions{Family: o.Family})
	} else {
		v.driftErr = errors.New("no node's kernel state was read")
	}
	if v.drift != nil {
		v.findings, v.pending = splitPending(s, v.drift.Findings, o.Changed, o.Settle)
		sortFindings(v.findings)
		sortFindings(v.pending)
	}
	return v
}

// splitPending sets apart the findings kube-proxy may not have applied
// yet, by settle's rules with kube-proxy's syncs unknown: those of Services
// that changed after their node's state was read, or less than settle
// before (the grace period).
func splitPending(s *snapshot.Snapshot, fs []behavior.Finding, changed map[string]time.Time, grace time.Duration) (drift, pending []behavior.Finding) {
	read := map[string]time.Time{}
	for _, n := range s.Nodes {
		read[n.Name] = n.CapturedAt
	}
	rules := settle.Rules{Grace: grace}
	for _, f := range fs {
		at := changed[model.ParseServicePortName(f.Service).Service()]
		if !rules.Settled(settle.KubeProxy{}, at, time.Time{}, read[f.Node]) {
			pending = append(pending, f)
			continue
		}
		drift = append(drift, f)
	}
	return drift, pending
}

func sortFindings(fs []behavior.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Node < b.Node
	})
}

// Snapshot is the state the survey reads.
func (v *Survey) Snapshot() *snapshot.Snapshot { return v.snap }

// Family is the IP family analysed.
func (v *Survey) Family() string { return v.family }

// Drift is the drift report of every node read, or why there is none.
func (v *Survey) Drift() (*analysis.DriftReport, error) { return v.drift, v.driftErr }

// Findings are the drift findings of every node read, sorted by type,
// Service and node; pending ones are not among them.
func (v *Survey) Findings() []behavior.Finding { return v.findings }

// Pending are the differences that wait for kube-proxy's sync of a change
// the node's state predates (see Options.Changed): not drift, not yet.
func (v *Survey) Pending() []behavior.Finding { return v.pending }

// Node is one node of the survey: read, or not and why.
type Node struct {
	Name string
	// Mode, Findings and Pending come from its drift check.
	Mode              string
	Findings, Pending int
	// Err says why the node's state could not be read or analysed.
	Err error
}

// Nodes lists every node read and every one that could not be, sorted.
func (v *Survey) Nodes() []Node {
	var out []Node
	seen := map[string]bool{}
	if v.drift != nil {
		for _, n := range v.drift.Nodes {
			node := Node{Name: n.Name, Mode: n.Mode}
			for _, f := range v.findings {
				if f.Node == n.Name {
					node.Findings++
				}
			}
			for _, f := range v.pending {
				if f.Node == n.Name {
					node.Pending++
				}
			}
			out = append(out, node)
			seen[n.Name] = true
		}
	}
	// A node read but not checked for drift (its mode cannot be checked
	// yet, say) still explains and traces; the drift report's error is
	// the findings' to show.
	for _, n := range v.snap.Nodes {
		if !seen[n.Name] {
			out = append(out, Node{Name: n.Name, Mode: n.KubeProxy.Mode})
			seen[n.Name] = true
		}
	}
	for name, err := range v.unread {
		if !seen[name] {
			out = append(out, Node{Name: name, Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// analysis is the full analysis of one node (every path with its rules),
// made once.
func (v *Survey) analysis(node string) (*analysis.NodeAnalysis, error) {
	if err, ok := v.unread[node]; ok {
		return nil, fmt.Errorf("node %s was not read: %w", node, err)
	}
	v.mu.Lock()
	na := v.analyses[node]
	if na == nil {
		na = &nodeAnalysis{}
		v.analyses[node] = na
	}
	v.mu.Unlock()
	na.once.Do(func() {
		na.a, na.err = analysis.AnalyzeWith(v.snap, node, v.family, analysis.Options{})
	})
	return na.a, na.err
}

// Explain is the explain report of a Service on a node, as `explain`
// prints it.
func (v *Survey) Explain(ref analysis.ServiceRef, node string) (*trace.ExplainReport, error) {
	a, err := v.analysis(node)
	if err != nil {
		return nil, err
	}
	return trace.Explain(a, v.snap.Cluster, ref)
}

// Trace walks one packet through a node's rules, as `trace` does.
func (v *Survey) Trace(node string, spec trace.PacketSpec) (*trace.TraceReport, error) {
	a, err := v.analysis(node)
	if err != nil {
		return nil, err
	}
	return trace.Trace(a, v.snap.Cluster, spec)
}

// Flows are the conntrack entries of a Service's frontends on a node,
// sorted by frontend, backend and status; nil when the node's state holds
// no conntrack table.
func (v *Survey) Flows(ref analysis.ServiceRef, node string) ([]analysis.Flow, bool, error) {
	a, err := v.analysis(node)
	if err != nil {
		return nil, false, err
	}
	var out []analysis.Flow
	for _, f := range a.Flows {
		if ref.Matches(f.Service) {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Frontend.String() != b.Frontend.String() {
			return a.Frontend.String() < b.Frontend.String()
		}
		if a.Backend != b.Backend {
			return a.Backend < b.Backend
		}
		return a.Status < b.Status
	})
	return out, v.conntrackRead(node), nil
}

// conntrackRead says whether the node's state holds its conntrack table.
func (v *Survey) conntrackRead(node string) bool {
	for _, n := range v.snap.Nodes {
		if n.Name != node {
			continue
		}
		for _, d := range n.Dumps {
			if d.Collector == snapshot.CollectorConntrack {
				return true
			}
		}
	}
	return false
}
