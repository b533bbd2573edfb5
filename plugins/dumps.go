package plugins

import (
	"fmt"
	"slices"
	"strings"

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

// Backends are the kernel backends the planes' dumps name (iptables'
// legacy and nf_tables), in the order declared: what a repair may be
// told to write.
func Backends() []string {
	var out []string
	for _, k := range Dumps() {
		for _, t := range k.Tools {
			if t.Backend != "" && !slices.Contains(out, t.Backend) {
				out = append(out, t.Backend)
			}
		}
	}
	return out
}

// CheckBackend says whether b ("" for the one holding kube-proxy's
// objects) is a backend a plane declares.
func CheckBackend(b string) error {
	if bs := Backends(); b != "" && !slices.Contains(bs, b) {
		return fmt.Errorf("%q: want %s", b, strings.Join(bs, " or "))
	}
	return nil
}
