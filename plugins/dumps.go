package plugins

import (
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// Dumps are the kinds of kernel dump svctrace reads, as the planes of
// Loaders declare them (dataplane.Declarer), each once, and the connection
// table, which no plane owns: collect's import flags, the importer and the
// readers of a live node all follow from this list.
func Dumps() []dataplane.DumpKind {
	var out []dataplane.DumpKind
	seen := map[string]bool{}
	for _, l := range Loaders() {
		d, ok := l.(dataplane.Declarer)
		if !ok {
			continue
		}
		for _, k := range d.Dumps() {
			if !seen[k.Collector] {
				seen[k.Collector] = true
				out = append(out, k)
			}
		}
	}
	return append(out, dataplane.DumpKind{Collector: snapshot.CollectorConntrack, Flag: "conntrack",
		Help: "Import: the node's conntrack table (conntrack -L -o extended, or /proc/net/nf_conntrack)"})
}
