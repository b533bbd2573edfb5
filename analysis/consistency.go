package analysis

import (
	"fmt"
	"sort"
	"strings"
)

// consistency are notes on how the nodes of a report differ from each
// other, whatever the API objects say: kube-proxy in several modes or
// versions, or on several iptables backends, across the nodes read.
func consistency(nodes []NodeFindings) []string {
	var out []string
	for _, d := range []struct {
		what string
		of   func(NodeFindings) string
	}{
		{"kube-proxy runs in several modes", func(n NodeFindings) string { return n.Mode }},
		{"kube-proxy's versions differ", func(n NodeFindings) string { return n.Version }},
		{"kube-proxy's rules are on several iptables backends", func(n NodeFindings) string { return n.Backend }},
	} {
		by := map[string][]string{}
		for _, n := range nodes {
			if n.Err == nil {
				if v := d.of(n); v != "" {
					by[v] = append(by[v], n.Node)
				}
			}
		}
		if len(by) < 2 {
			continue
		}
		values := make([]string, 0, len(by))
		for v := range by {
			values = append(values, v)
		}
		// The most common first.
		sort.Slice(values, func(i, j int) bool {
			if len(by[values[i]]) != len(by[values[j]]) {
				return len(by[values[i]]) > len(by[values[j]])
			}
			return values[i] < values[j]
		})
		var parts []string
		for _, v := range values {
			parts = append(parts, fmt.Sprintf("%s on %s", v, nodeList(by[v])))
		}
		out = append(out, d.what+": "+strings.Join(parts, "; "))
	}
	return out
}

// nodeList names nodes, the first few and how many more.
func nodeList(nodes []string) string {
	sort.Strings(nodes)
	const shown = 5
	if len(nodes) <= shown {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:shown], ", "), len(nodes)-shown)
}
