package nftables

import (
	"encoding/json"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// captures are the real node2 states of the two kube-proxy versions, on
// the same Services and endpoints.
func captures() []string {
	return []string{
		"../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.json",
		"../../testdata/kube-proxy-v1.33.13/two-nodes/node2.nft.json",
	}
}

func version(path string) string {
	for _, p := range strings.Split(path, "/") {
		if strings.HasPrefix(p, "kube-proxy-") {
			return strings.TrimPrefix(p, "kube-proxy-")
		}
	}
	return path
}

func readCapture(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t testing.TB, name string, data []byte) *Ruleset {
	t.Helper()
	rs, err := Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// edit decodes a capture, lets f change its object list, and encodes it
// again.
func edit(t testing.TB, data []byte, f func([]any) []any) []byte {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["nftables"] = f(doc["nftables"].([]any))
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// object returns the body of the i-th object if it is of kind with the
// given name (or chain, for a rule).
func object(item any, kind, name string) (map[string]any, bool) {
	m, ok := item.(map[string]any)[kind].(map[string]any)
	if !ok || m["family"] != "ip" {
		return nil, false
	}
	key := "name"
	if kind == "rule" {
		key = "chain"
	}
	return m, m[key] == name
}

func node2Env(sticky ...string) *dataplane.Env {
	env := &dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}}
	if len(sticky) > 0 {
		env.Sticky = map[string]bool{}
		for _, s := range sticky {
			env.Sticky[s] = true
		}
	}
	return env
}

func pkt(src, dst, proto string, port uint16) dataplane.Packet {
	return dataplane.Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Protocol: proto,
		SrcPort: 40000, DstPort: port, Entry: dataplane.Prerouting}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// backends sums branch probabilities per DNAT target.
func backends(br []dataplane.Branch) map[string]float64 {
	out := map[string]float64{}
	for _, b := range br {
		if b.DNAT != "" {
			out[b.DNAT] += b.Probability
		}
	}
	return out
}

func hopsText(b dataplane.Branch) string {
	var lines []string
	for _, h := range b.Hops {
		lines = append(lines, h.Table+" "+h.Chain+" #"+strconv.Itoa(h.Line)+": "+h.Rule+" ["+h.Element+"]")
	}
	return strings.Join(lines, "\n")
}
