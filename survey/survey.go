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
	return v
}

// Snapshot is the state the survey reads.
func (v *Survey) Snapshot() *snapshot.Snapshot { return v.snap }

// Family is the IP family analysed.
func (v *Survey) Family() string { return v.family }

// Drift is the drift report of every node read, or why there is none.
func (v *Survey) Drift() (*analysis.DriftReport, error) { return v.drift, v.driftErr }

// Findings are the drift findings of every node read, sorted by type,
// Service and node.
func (v *Survey) Findings() []behavior.Finding {
	if v.drift == nil {
		return nil
	}
	out := append([]behavior.Finding(nil), v.drift.Findings...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Node < b.Node
	})
	return out
}

// Node is one node of the survey: read, or not and why.
type Node struct {
	Name string
	// Mode and Findings come from its drift check.
	Mode     string
	Findings int
	// Err says why the node's state could not be read or analysed.
	Err error
}

// Nodes lists every node read and every one that could not be, sorted.
func (v *Survey) Nodes() []Node {
	var out []Node
	seen := map[string]bool{}
	if v.drift != nil {
		for _, n := range v.drift.Nodes {
			out = append(out, Node{Name: n.Name, Mode: n.Mode, Findings: n.Findings})
			seen[n.Name] = true
		}
	}
	for _, n := range v.snap.Nodes {
		if !seen[n.Name] {
			out = append(out, Node{Name: n.Name, Err: v.driftErr})
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
