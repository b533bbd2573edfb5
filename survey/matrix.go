package survey

import (
	"slices"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
)

// Cell is what one client class meets at one frontend on one node.
type Cell struct {
	Verdict behavior.Verdict
	// Backends counts the backends a forwarded connection can reach.
	Backends int
	// Drift: a finding of this node names this frontend and class;
	// Pending: a difference that waits for kube-proxy's sync does.
	Drift, Pending bool
	// Missing: the node has no path for this frontend at all.
	Missing bool
}

// NodeRow is one node's line of the Service × nodes screen.
type NodeRow struct {
	Node string
	Mode string
	// Cells are indexed by frontend (the row set's Frontends) then by
	// behavior.SourceClasses.
	Cells [][]Cell
	// Findings counts the Service's findings on the node.
	Findings int
	// Err is why the node could not be read or analysed.
	Err error
}

// Matrix is a Service on every node: its frontends, and a row per node.
type Matrix struct {
	Service   analysis.ServiceRef
	Frontends []behavior.Key
	Rows      []NodeRow
}

// Matrix explains a Service on every node of the survey.
func (v *Survey) Matrix(ref analysis.ServiceRef) (*Matrix, error) {
	if _, err := ref.Resolve(v.snap.Cluster); err != nil {
		return nil, err
	}
	m := &Matrix{Service: ref}
	type nodeReport struct {
		row NodeRow
		fs  []behavior.Frontend
	}
	var reports []nodeReport
	for _, n := range v.Nodes() {
		row := NodeRow{Node: n.Name, Mode: n.Mode, Err: n.Err}
		var fs []behavior.Frontend
		if row.Err == nil {
			r, err := v.Explain(ref, n.Name)
			if err != nil {
				row.Err = err
			} else {
				fs = r.Frontends
				row.Mode = r.Mode
				row.Findings = len(r.Findings)
				for _, f := range fs {
					if k := column(f.Key); !slices.Contains(m.Frontends, k) {
						m.Frontends = append(m.Frontends, k)
					}
				}
			}
		}
		reports = append(reports, nodeReport{row, fs})
	}
	for _, nr := range reports {
		row := nr.row
		if row.Err == nil {
			drift, pending := v.FindingsOf(ref, row.Node)
			for _, k := range m.Frontends {
				row.Cells = append(row.Cells, cellsOf(k, nr.fs, drift, pending))
			}
		}
		m.Rows = append(m.Rows, row)
	}
	return m, nil
}

// column is the matrix column of a frontend: a NodePort is one column
// whatever node address it is open on, since each node has its own.
func column(k behavior.Key) behavior.Key {
	if k.Kind == behavior.NodePort {
		k.IP = ""
	}
	return k
}

// cellsOf is what each class meets at a column on one node. A NodePort
// open on several of the node's addresses shows the worst of them, so
// that one address's trouble is never hidden by another's health.
func cellsOf(col behavior.Key, fs []behavior.Frontend, drift, pending []behavior.Finding) []Cell {
	out := make([]Cell, len(behavior.SourceClasses))
	for i := range out {
		out[i] = Cell{Missing: true, Verdict: behavior.Unhandled}
	}
	first := true
	for _, f := range fs {
		if column(f.Key) != col {
			continue
		}
		for i, c := range behavior.SourceClasses {
			o := f.Outcomes[c]
			cell := Cell{Verdict: o.Verdict, Backends: len(o.Backends)}
			cell.Drift = names(drift, f.Key, c)
			cell.Pending = !cell.Drift && names(pending, f.Key, c)
			if first || cell.rank() > out[i].rank() {
				out[i] = cell
			}
		}
		first = false
	}
	// A frontend the node lacks while a change waits for kube-proxy's
	// sync (a Service just added) is pending, not missing.
	for i := range out {
		if out[i].Missing && len(pending) > 0 {
			out[i].Pending = true
		}
	}
	return out
}

// rank orders cells from healthy to troubled: forwarded, rejected or
// dropped, not handled, pending, missing, drifting.
func (c Cell) rank() int {
	switch {
	case c.Drift:
		return 5
	case c.Missing:
		return 4
	case c.Pending:
		return 3
	case c.Verdict == behavior.Unhandled || c.Verdict == behavior.Unknown || c.Verdict == "":
		return 2
	case c.Verdict != behavior.Forward:
		return 1
	}
	return 0
}

// names: one of the findings is about the frontend (a finding that names
// none is about the Service, not one frontend) and the class.
func names(fs []behavior.Finding, k behavior.Key, c behavior.SourceClass) bool {
	for _, f := range fs {
		if slices.Contains(f.Frontends, k.String()) && (len(f.Sources) == 0 || slices.Contains(f.Sources, string(c))) {
			return true
		}
	}
	return false
}
