package analysis

import "github.com/svctrace/svctrace/dataplane"

// Memo keeps, from one drift check of a node to the next, each node's
// observation of its kernel state (dataplane.ObserveMemo): the next check
// takes a Service's observed outcomes from it, instead of walking its
// frontends again, when nothing those walks depend on changed: on a node
// of ten thousand Services where a change touched one, that is one
// Service's walks instead of every one. The rest of the check (the model,
// the comparison, the text-level checks) runs whole. A node agent keeps
// one for its node; one check at a time.
type Memo struct {
	nodes map[string]*dataplane.ObserveMemo
}

// NewMemo makes an empty memo.
func NewMemo() *Memo { return &Memo{nodes: map[string]*dataplane.ObserveMemo{}} }

// of is the node's and family's observation (nil for a nil memo).
func (m *Memo) of(node, family string) *dataplane.ObserveMemo {
	if m == nil {
		return nil
	}
	k := node + "\x00" + family
	o := m.nodes[k]
	if o == nil {
		o = &dataplane.ObserveMemo{}
		m.nodes[k] = o
	}
	return o
}

// Counts are how many groups of frontends (a Service's each, or a
// frontend of no Service) the last check of the node and family took from
// the memo, and how many it walked.
func (m *Memo) Counts(node, family string) (reused, walked int) {
	if o := m.of(node, family); o != nil {
		return o.Reused, o.Walked
	}
	return 0, 0
}
