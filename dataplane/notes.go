package dataplane

import (
	"fmt"
	"slices"
	"strings"
)

// Notes are the assumptions a walker made on one branch (Branch.Notes),
// each said once. A branch that forks hands its notes to
// both sides; clip them first (slices.Clip) so that a note one side adds
// is never written into the other's.
type Notes []string

// Add formats a note and appends it unless the branch has it already.
func (n *Notes) Add(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	for _, x := range *n {
		if x == s {
			return
		}
	}
	*n = append(*n, s)
}

// InertLeftoverNote is the note on kube-proxy's chains of iptables mode
// that a table of iptables (backend) still holds while kube-proxy runs in
// another mode, when no packet enters them: nothing leads to them, so
// they act on nothing. Both planes that can read them (iptables-save, and
// nft for the nf_tables backend) say it in these words, once.
func InertLeftoverNote(backend, table string, chains []string) string {
	names := ShortList(slices.Sorted(slices.Values(chains)), 8)
	return fmt.Sprintf("iptables (%s backend) table %s still holds kube-proxy chains of iptables mode that no packet enters (%s): nothing leads to them, so they act on nothing and are not reported", backend, table, strings.Join(names, ", "))
}

// ShortList is the first n names, and a count of the rest.
func ShortList(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(slices.Clip(names[:n]), fmt.Sprintf("... %d more", len(names)-n))
}
