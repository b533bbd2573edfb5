//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// removeEndpointFromRules edits node1's kernel rules as kube-proxy would
// have after endpoint ip left the Service port (kube-proxy itself is
// stopped): spn names the port in iptables comments, nftBase in nftables
// chain names ("ns/name/proto/port").
func removeEndpointFromRules(t *testing.T, c *cluster, spn, nftBase, ip string) {
	t.Helper()
	if c.mode == "nftables" {
		removeEndpointNFT(t, c, nftBase, ip)
		return
	}
	nat, err := c.Exec("node1", "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^-A (KUBE-SVC-\S+) .*--comment "` + regexp.QuoteMeta(spn+" -> "+ip+":") + `.* -j (KUBE-SEP-\S+)$`).FindStringSubmatch(nat)
	if m == nil {
		t.Fatalf("no rule of %s to %s:\n%s", spn, ip, nat)
	}
	svc, sep := m[1], m[2]
	var rules []string
	for _, line := range strings.Split(nat, "\n") {
		if strings.HasPrefix(line, "-A "+svc+" ") && !strings.HasSuffix(line, "-j "+sep) {
			rules = append(rules, line)
		}
	}
	// The one endpoint left takes every connection: no statistic match.
	stat := regexp.MustCompile(` -m statistic --mode random --probability \S+`)
	script := []string{"set -e", "iptables -t nat -F " + svc}
	for _, r := range rules {
		script = append(script, "iptables -t nat "+stat.ReplaceAllString(r, ""))
	}
	script = append(script, "iptables -t nat -F "+sep, "iptables -t nat -X "+sep)
	if out, err := c.Exec("node1", "sh", "-c", strings.Join(script, "\n")); err != nil {
		t.Fatalf("editing iptables: %v\n%s", err, out)
	}
}

// removeEndpointNFT rewrites the Service's endpoint choice without ip
// (numgen one value less, the element gone) and deletes ip's endpoint
// chain, through nft's JSON interface.
func removeEndpointNFT(t *testing.T, c *cluster, base, ip string) {
	t.Helper()
	out, err := c.Exec("node1", "nft", "-j", "list", "table", "ip", "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nftables []map[string]any `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var cmds []map[string]any
	var endpointChains []string
	for _, obj := range doc.Nftables {
		if ch, ok := obj["chain"].(map[string]any); ok {
			name, _ := ch["name"].(string)
			if strings.HasPrefix(name, "endpoint-") && strings.Contains(name, base+"__"+ip+"/") {
				endpointChains = append(endpointChains, name)
			}
			continue
		}
		r, ok := obj["rule"].(map[string]any)
		if !ok {
			continue
		}
		chain, _ := r["chain"].(string)
		if !strings.HasPrefix(chain, "service-") || !strings.HasSuffix(chain, "-"+base) {
			continue
		}
		raw, _ := json.Marshal(r["expr"])
		if !strings.Contains(string(raw), ip) {
			continue
		}
		r["expr"] = dropChoice(r["expr"], ip)
		cmds = append(cmds, map[string]any{"replace": map[string]any{"rule": r}})
	}
	if len(cmds) == 0 {
		t.Fatalf("no rule of %s mentions %s:\n%s", base, ip, out)
	}
	for _, name := range endpointChains {
		cmds = append(cmds, map[string]any{"delete": map[string]any{"chain": map[string]any{"family": "ip", "table": "kube-proxy", "name": name}}})
	}
	b, err := json.Marshal(map[string]any{"nftables": cmds})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Exec("node1", "sh", "-c", fmt.Sprintf("echo '%s' | nft -j -f -", b)); err != nil {
		t.Fatalf("editing nftables: %v\n%s\n%s", err, out, b)
	}
}

// dropChoice removes the elements of numgen-keyed maps that mention ip,
// renumbers the rest and shrinks the numgen modulus to match.
func dropChoice(v any, ip string) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = dropChoice(x[i], ip)
		}
		return x
	case map[string]any:
		for _, k := range []string{"map", "vmap"} {
			m, ok := x[k].(map[string]any)
			if !ok {
				continue
			}
			key, _ := m["key"].(map[string]any)
			ng, isNumgen := key["numgen"].(map[string]any)
			data, _ := m["data"].(map[string]any)
			set, _ := data["set"].([]any)
			if !isNumgen || set == nil {
				continue
			}
			var keep []any
			for _, el := range set {
				raw, _ := json.Marshal(el)
				if !strings.Contains(string(raw), ip) {
					pair := el.([]any)
					pair[0] = float64(len(keep))
					keep = append(keep, pair)
				}
			}
			data["set"] = keep
			ng["mod"] = float64(len(keep))
		}
		for k := range x {
			x[k] = dropChoice(x[k], ip)
		}
		return x
	}
	return v
}
