package analysis

import (
	"fmt"
	"sort"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
)

// maxCrossNodeNotes bounds the differences between nodes a report lists.
const maxCrossNodeNotes = 20

// crossNode compares the nodes' behaviour with each other, not with the
// model: for each frontend and source class, among the nodes that should
// do the same (the same expected outcome: Local traffic policies and
// topology hints make nodes differ by design), the nodes that do
// otherwise than most. Without API objects nothing tells what should
// differ, and only frontends most nodes handle and some do not are named.
func crossNode(nodes []NodeFindings) []string {
	type seen struct{ node, exp, obs string }
	type slot struct {
		key, svc string
		class    behavior.SourceClass
	}
	at := map[slot][]seen{}
	var slots []slot
	handled := map[string][]string{} // key → nodes that list it, without API objects
	keys := map[string]string{}      // key → service
	read, withAPI := 0, false
	for _, n := range nodes {
		if n.Err != nil || n.Behaviour == nil {
			continue
		}
		read++
		for _, d := range n.Behaviour {
			keys[d.Key] = d.Service
			if len(d.Expected) == 0 {
				handled[d.Key] = append(handled[d.Key], n.Node)
				continue
			}
			withAPI = true
			for i, c := range behavior.SourceClasses {
				if i >= len(d.Observed) || i >= len(d.Expected) {
					break
				}
				s := slot{d.Key, d.Service, c}
				if _, ok := at[s]; !ok {
					slots = append(slots, s)
				}
				at[s] = append(at[s], seen{n.Node, d.Expected[i], d.Observed[i]})
			}
		}
	}
	var out []string
	for _, s := range slots {
		groups := map[string][]seen{}
		for _, e := range at[s] {
			groups[e.exp] = append(groups[e.exp], e)
		}
		for _, g := range groups {
			count := map[string]int{}
			for _, e := range g {
				count[e.obs]++
			}
			most, n := "", 0
			for obs, c := range count {
				if c > n || (c == n && obs < most) {
					most, n = obs, c
				}
			}
			if len(g) < 3 || 2*n <= len(g) {
				continue // no clear majority to compare with
			}
			others := wording.Count(n, "other node", "other nodes")
			for _, e := range g {
				if e.obs == most {
					continue
				}
				what := fmt.Sprintf("node %s %s, the %s %s", e.node, describeDigest(e.obs, false), others, describeDigest(most, n > 1))
				if describeDigest(e.obs, false) == describeDigest(most, false) {
					// As many backends, or the same verdict: not the same.
					what = fmt.Sprintf("node %s %s, but not as the %s do", e.node, describeDigest(e.obs, false), others)
				}
				out = append(out, fmt.Sprintf("%s%s from %s clients: %s", s.key, svcOf(s.svc), s.class, what))
			}
		}
	}
	if !withAPI && read >= 3 {
		for key, on := range handled {
			if len(on) == read || 3*len(on) < 2*read {
				continue
			}
			missing := missingFrom(nodes, on)
			out = append(out, fmt.Sprintf("%s%s: not handled on %s; the %s handle it", key, svcOf(keys[key]),
				nodeList(missing), wording.Count(len(on), "other node", "other nodes")))
		}
	}
	sort.Strings(out)
	if len(out) > maxCrossNodeNotes {
		out = append(out[:maxCrossNodeNotes], fmt.Sprintf("and %d more differences between nodes", len(out)-maxCrossNodeNotes))
	}
	for i := range out {
		out[i] = "nodes differ: " + out[i]
	}
	return out
}

func svcOf(svc string) string {
	if svc == "" {
		return ""
	}
	return " (" + svc + ")"
}

// missingFrom are the nodes read that are not in on.
func missingFrom(nodes []NodeFindings, on []string) []string {
	has := map[string]bool{}
	for _, n := range on {
		has[n] = true
	}
	var out []string
	for _, n := range nodes {
		if n.Err == nil && n.Behaviour != nil && !has[n.Node] {
			out = append(out, n.Node)
		}
	}
	return out
}
