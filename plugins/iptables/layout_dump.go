package iptables

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/snapshot"
)

// NodeLayout reads kube-proxy's part of a node's rules of one family: from
// the dump of the backend given, else of the backend that holds
// kube-proxy's chains, else of nf_tables (what a kube-proxy image of
// today picks on a node with no rules). It returns the backend read, and
// ok false when the node has no dump of the family.
func NodeLayout(ns *snapshot.NodeState, family, backend string) (l *Layout, picked string, ok bool, err error) {
	return NodeOwnedLayout(ns, family, backend, nil)
}

// NodeOwnedLayout is NodeLayout of the chains a mode owns (nil: iptables
// mode).
func NodeOwnedLayout(ns *snapshot.NodeState, family, backend string, own *Ownership) (l *Layout, picked string, ok bool, err error) {
	var dumps []*snapshot.Dump
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if fam, isIPT := dumpFamily(d); isIPT && fam == family && d.Table == "" {
			dumps = append(dumps, d)
		}
	}
	if len(dumps) == 0 {
		return nil, "", false, nil
	}
	var pick *snapshot.Dump
	for _, d := range dumps {
		switch {
		case backend != "":
			if d.Backend == backend {
				pick = d
			}
		case strings.Contains(d.Text, ":KUBE-SERVICES "):
			if pick == nil || !strings.Contains(pick.Text, ":KUBE-SERVICES ") {
				pick = d
			}
		case pick == nil || d.Backend == "nf_tables" && !strings.Contains(pick.Text, ":KUBE-SERVICES "):
			pick = d
		}
	}
	if pick == nil {
		return nil, "", false, fmt.Errorf("node %s has no %s dump of the %s backend", ns.Name, family, backend)
	}
	l, err = ReadOwnedLayout(family, pick.Text, own)
	if err != nil {
		return nil, "", false, fmt.Errorf("node %s, %s %s (%s): %w", ns.Name, pick.Collector, pick.Backend, pick.Origin, err)
	}
	return l, pick.Backend, true, nil
}
