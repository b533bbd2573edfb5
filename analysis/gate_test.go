package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// firewalldTable is firewalld's forward chain as nft -j printed it (nft
// 1.0.6, the table loaded with nft -f); dnat adds the rule firewalld
// writes since 0.9 to let translated connections through.
func firewalldTable(dnat bool) string {
	rules := `{"rule": {"family": "inet", "table": "firewalld", "chain": "filter_FORWARD", "handle": 2, "expr": [{"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": ["established", "related"]}}, {"accept": null}]}}, `
	if dnat {
		rules += `{"rule": {"family": "inet", "table": "firewalld", "chain": "filter_FORWARD", "handle": 3, "expr": [{"match": {"op": "in", "left": {"ct": {"key": "status"}}, "right": "dnat"}}, {"accept": null}]}}, `
	}
	rules += `{"rule": {"family": "inet", "table": "firewalld", "chain": "filter_FORWARD", "handle": 4, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "lo"}}, {"accept": null}]}}, {"rule": {"family": "inet", "table": "firewalld", "chain": "filter_FORWARD", "handle": 5, "expr": [{"reject": {"type": "icmpx", "expr": "admin-prohibited"}}]}}`
	return `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "firewalld", "handle": 1}}, {"chain": {"family": "inet", "table": "firewalld", "name": "filter_FORWARD", "handle": 1, "type": "filter", "hook": "forward", "prio": 10, "policy": "accept"}}, ` + rules + `]}`
}

// TestGateFirewalldOnIPTablesNode: on a node in iptables mode, firewalld's
// nftables table sees the packets kube-proxy's iptables rules translated.
func TestGateFirewalldOnIPTablesNode(t *testing.T) {
	with := func(table string) string {
		fs := driftLab(t, func(_ *snapshot.Snapshot, ns *snapshot.NodeState) {
			for i := range ns.Dumps {
				if ns.Dumps[i].Collector == "nft-json" {
					ns.Dumps[i].Text = table
				}
			}
		})
		var out []string
		for _, f := range fs {
			out = append(out, f.Type+": "+f.Observed)
		}
		return strings.Join(out, "\n")
	}
	got := with(firewalldTable(false))
	if !strings.HasPrefix(got, "ForeignVerdict: reject by the rule of table inet firewalld, chain filter_FORWARD (reject with icmpx admin-prohibited) (firewalld)") || strings.Count(got, "\n") != 0 {
		t.Errorf("firewalld's reject of forwarded connections:\n%s", got)
	}
	// firewalld 0.9 and later accepts what was translated (ct status dnat).
	if got := with(firewalldTable(true)); got != "" {
		t.Errorf("firewalld letting translated connections through:\n%s", got)
	}
}
