package dataplane

import "fmt"

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
