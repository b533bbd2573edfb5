package nftables

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// narrowInputs are the nft dumps a narrow read is checked on: the bundled
// captures, the lab snapshots' nodes, and synthetic nodes in kube-proxy
// v1.36.3's layout (with endpoints, and without).
func narrowInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{
		"synthetic 200x3": snapshottest.NFTablesJSON(200, 3),
		"synthetic 30x0":  snapshottest.NFTablesJSON(30, 0),
		// Big enough to be scanned in two parts, its maps' elements read
		// on other CPUs.
		"synthetic 2500x2": snapshottest.NFTablesJSON(2500, 2),
	}
	// An escape in a big map: its elements are read by the decoder.
	in["synthetic 2500x2, escape in a big map"] = strings.Replace(in["synthetic 2500x2"],
		`[{"concat": ["10.96.0.10", "tcp", 80]}`, `[{"concat": ["10.96.0.1\u0030", "tcp", 80]}`, 1)
	for _, c := range captures() {
		in[c] = string(readCapture(t, c))
		// A note of a rule that listing the frontends reads (it
		// consults a NodePort map with elements).
		const vmap = `"data": "@service-nodeports"}}`
		if strings.Contains(in[c], vmap) && strings.Contains(c, "v1.36.3") {
			in[c+", unknown statement"] = strings.Replace(in[c], vmap, vmap+`, {"xyz": {"a": 1}}`, 1)
		}
	}
	files, err := filepath.Glob("../../examples/*.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range s.Nodes {
			for _, d := range n.Dumps {
				if d.Collector == CollectorJSON {
					in[filepath.Base(f)+" "+n.Name] = d.Text
				}
			}
		}
	}
	if len(in) < 5 {
		t.Fatalf("only %d inputs", len(in))
	}
	for name, text := range variants(t, snapshottest.NFTablesJSON(20, 3)) {
		in["synthetic 20x3, "+name] = text
	}
	return in
}

// variants are documents written in ways the narrow scan reads otherwise
// (or gives up on): escapes where it reads names, an escape in a rule and
// in a set, a rule before its chain's declaration, a chain with keys the
// scan does not read.
func variants(t *testing.T, good string) map[string]string {
	t.Helper()
	const lateRule = `{"rule": {"family": "ip", "table": "kube-proxy", "chain": "late-chain", "handle": 999, "expr": [{"counter": null}]}}`
	const tableEnd = `"name": "kube-proxy", "handle": 3}}`
	out := map[string]string{}
	for name, r := range map[string][2]string{
		"escaped chain of a rule": {`"chain": "services"`, `"chain": "serv\u0069ces"`},
		"escaped comment":         {`"comment": "masquerade clusterIP traffic from outside cluster"`, `"comment": "masquerade clusterIP traffic\u0020from outside cluster"`},
		"escaped set element":     {`"10.96.0.10"`, `"10.96.0.1\u0030"`},
		"escaped kind":            {`{"table": {"family": "ip6"`, `{"t\u0061ble": {"family": "ip6"`},
		"chain with a comment":    {`"name": "reject-chain", "handle": 43`, `"name": "reject-chain", "comment": "rejects", "handle": 43`},
		"rule before its chain": {tableEnd, tableEnd + ", " + lateRule + `, {"chain": {"family": "ip", "table": "kube-proxy", "name": "late-chain", "handle": 998}}, ` +
			strings.Replace(lateRule, "999", "1000", 1)},
		"white space": {`"chain": "services", "handle": 77`, "\"chain\" :\n \"services\" ,\t\"handle\" : 77 "},
	} {
		if !strings.Contains(good, r[0]) {
			t.Fatalf("variant %s: no %s", name, r[0])
		}
		out[name] = strings.Replace(good, r[0], r[1], 1)
	}
	return out
}

func nodeWith(text string) *snapshot.NodeState {
	return &snapshot.NodeState{Name: "node1", Dumps: []snapshot.Dump{{Collector: CollectorJSON, Origin: "ruleset.json", Text: text}}}
}

// loadBoth reads a dump in full and narrowly.
func loadBoth(t *testing.T, text, family string) (*Plane, *Plane) {
	t.Helper()
	whole, err := Loader{}.Load(nodeWith(text), family)
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := Loader{}.LoadNarrow(nodeWith(text), family)
	if err != nil {
		t.Fatal(err)
	}
	if whole == nil || narrow == nil {
		if whole != nil || narrow != nil {
			t.Fatalf("one read has a plane, the other not: %v %v", whole, narrow)
		}
		return nil, nil
	}
	return whole.(*Plane), narrow.(*Plane)
}

// probes are packets to a frontend from a pod, the node and outside.
func probes(f behavior.Frontend) []dataplane.Packet {
	dst := netip.MustParseAddr("192.0.2.11")
	if f.Key.IP != "" {
		dst = netip.MustParseAddr(f.Key.IP)
	}
	src := map[bool][3]string{true: {"10.244.1.77", "192.0.2.11", "203.0.113.9"}, false: {"fd00:10:244::77", "2001:db8::11", "2001:db8:ff::9"}}[dst.Is4()]
	proto := strings.ToLower(f.Key.Protocol)
	var out []dataplane.Packet
	for i, s := range src {
		entry := dataplane.Prerouting
		if i == 1 {
			entry = dataplane.Output
		}
		out = append(out, dataplane.Packet{Src: netip.MustParseAddr(s), Dst: dst, Protocol: proto, SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: entry})
	}
	return out
}

// sameAnswers compares everything a plane answers, the narrow one read
// lazily as an analysis reads it (walks in parallel with the checks).
func sameAnswers(t *testing.T, where string, whole, narrow *Plane) {
	t.Helper()
	env := &dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr("2001:db8::11")}}
	fs := whole.Frontends()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var diffs []string
	differ := func(format string, args ...any) {
		mu.Lock()
		diffs = append(diffs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for _, mode := range []string{"", "nftables", "iptables"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, want := narrow.Checks("node1", mode), whole.Checks("node1", mode); !reflect.DeepEqual(got, want) {
				differ("checks (mode %q): got %+v, want %+v", mode, got, want)
			}
		}()
	}
	ww, nw := whole.Walker(env), narrow.Walker(env)
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, pk := range probes(f) {
				if got, want := nw.Walk(pk), ww.Walk(pk); !reflect.DeepEqual(got, want) {
					differ("walk %s: got %+v, want %+v", pk, got, want)
				}
			}
		}()
	}
	if got := narrow.Frontends(); !reflect.DeepEqual(got, fs) {
		differ("frontends: got %+v, want %+v", got, fs)
	}
	if got, want := narrow.Infer(), whole.Infer(); !reflect.DeepEqual(got, want) {
		differ("infer: got %+v, want %+v", got, want)
	}
	wg.Wait()
	if got, want := narrow.Leftovers("node1", "iptables"), whole.Leftovers("node1", "iptables"); !reflect.DeepEqual(got, want) {
		differ("leftovers: got %+v, want %+v", got, want)
	}
	if err := narrow.Err(); err != nil {
		differ("Err: %v", err)
	}
	for _, d := range diffs {
		t.Errorf("%s: %s", where, d)
	}
}

// sameState compares the rulesets once every rule of the narrow one is
// read: the same tables, chains, rules, sets and notes.
func sameState(t *testing.T, where string, whole, narrow *Ruleset) {
	t.Helper()
	if len(whole.Tables) != len(narrow.Tables) {
		t.Fatalf("%s: %d tables, want %d", where, len(narrow.Tables), len(whole.Tables))
	}
	for i, wt := range whole.Tables {
		nt := narrow.Tables[i]
		if wt.ID() != nt.ID() || wt.Handle != nt.Handle || len(wt.Chains) != len(nt.Chains) {
			t.Fatalf("%s: table %s (%d chains), want %s (%d chains)", where, nt.ID(), len(nt.Chains), wt.ID(), len(wt.Chains))
		}
		if !reflect.DeepEqual(nt.Sets, wt.Sets) || !reflect.DeepEqual(nt.Counters, wt.Counters) || !reflect.DeepEqual(nt.Objects, wt.Objects) {
			t.Errorf("%s: table %s: sets, counters or objects differ", where, wt.ID())
		}
		for j, wc := range wt.Chains {
			nc := narrow.Tables[i].Chains[j]
			if nc.ruleCount() != len(wc.Rules) {
				t.Errorf("%s: chain %s counts %d rules, want %d", where, wc.Name, nc.ruleCount(), len(wc.Rules))
			}
			got, want := *nc, *wc
			got.Rules, got.lazy = nc.rules(), nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: chain %s differs:\n got %+v\nwant %+v", where, wc.Name, got, want)
			}
		}
	}
}

// TestLoadNarrowSameAnswers: a narrow read answers what a full read does,
// on every input and family, and holds the same state once read whole.
func TestLoadNarrowSameAnswers(t *testing.T) {
	for name, text := range narrowInputs(t) {
		for _, fam := range []string{"IPv4", "IPv6"} {
			whole, narrow := loadBoth(t, text, fam)
			if whole == nil {
				continue
			}
			// An escape in a rule's chain or in an element's kind
			// leaves the document to Parse.
			if fallback := strings.HasSuffix(name, "escaped chain of a rule") || strings.HasSuffix(name, "escaped kind"); (narrow.deferred == nil) != fallback {
				t.Errorf("%s: read in full, not narrowly", name)
			}
			sameAnswers(t, name+" "+fam, whole, narrow)
			sameState(t, name+" "+fam, whole.rs, narrow.rs)
			if got, want := narrow.Notes(), whole.Notes(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: notes once read whole:\n got %q\nwant %q", name, fam, got, want)
			}
		}
	}
}

// TestLoadNarrowReadsLittle: explaining one Service of a node reads the
// rules of its chain, not every Service's.
func TestLoadNarrowReadsLittle(t *testing.T) {
	pl, err := Loader{}.LoadNarrow(nodeWith(snapshottest.NFTablesJSON(200, 3)), "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plane)
	fs := p.Frontends()
	p.Infer()
	p.Checks("node1", "nftables")
	w := p.Walker(&dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}})
	br := w.Walk(probes(fs[len(fs)/2])[0])
	if len(backends(br)) != 3 {
		t.Fatalf("walk found %v, want 3 backends", backends(br))
	}
	read, lazy := 0, 0
	for _, c := range p.kp.Chains {
		if _, _, ok := SPNFromName(c.Name); ok && c.lazy != nil {
			lazy++
			if len(c.Rules) > 0 {
				read++
			}
		}
	}
	if lazy < 200 || read > 1 {
		t.Errorf("%d of %d chains with rules left for later were read; want only the walked Service's", read, lazy)
	}
}

// TestLoadNarrowMalformed: what Parse refuses, a narrow read refuses with
// the same error.
func TestLoadNarrowMalformed(t *testing.T) {
	good := snapshottest.NFTablesJSON(5, 2)
	cases := map[string]string{
		"empty":            "",
		"text form cut":    "table ip kube-proxy {\n chain services {\n",
		"not JSON":         "nftables: yes",
		"truncated":        good[:len(good)/2],
		"truncated string": good[:strings.Index(good, "service-")+3],
		"no array":         `{"other": []}`,
		"array not list":   `{"nftables": {}}`,
		"top not object":   `[{"nftables": []}]`,
		"trailing data":    good + `{"x": 1}`,
		"bracket mismatch": strings.Replace(good, `"offset": 0}}`, `"offset": 0]}`, 1),
		"bad literal":      strings.Replace(good, `"policy": "accept"`, `"policy": acept`, 1),
		"two keys":         strings.Replace(good, `{"table": {"family": "ip"`, `{"x": 1, "table": {"family": "ip"`, 1),
		"rule missing chain": strings.Replace(good, `{"rule": {"family": "ip", "table": "kube-proxy", "chain": "services"`,
			`{"rule": {"family": "ip", "table": "kube-proxy"`, 1),
		"set bad element": strings.Replace(good, `"elem": ["10.96.0.10"`, `"elem": ["10.96.0.300"`, 1),
		// A rule left for later has the first error; a set read at once
		// the second: Load tells the first.
		"two errors": lastReplaced(strings.Replace(good, `"mod": 2`, `"mod": 2x`, 1), `"policy": "accept"`, `"policy": acept`),
	}
	// Sets big enough to be read in another goroutine.
	big := snapshottest.NFTablesJSON(2500, 2)
	first := `"elem": [[{"concat": ["10.96.0.10", "tcp", 80]}`
	if !strings.Contains(big, first) {
		t.Fatalf("no %s in the generated document", first)
	}
	badElement := strings.Replace(big, first, `"elem": [[{"concat": ["10.96.0.300", "tcp", 80]}`, 1)
	cases["big map bad element"] = badElement
	cases["big map bad literal"] = strings.Replace(big, first, `"elem": [[{"concat": ["10.96.0.10", "tcp", 80x]}`, 1)
	cases["big map, then a bad rule"] = lastReplaced(badElement, `"policy": "accept"`, `"policy": acept`)
	for name, text := range cases {
		_, werr := Loader{}.Load(nodeWith(text), "IPv4")
		_, nerr := Loader{}.LoadNarrow(nodeWith(text), "IPv4")
		if werr == nil || nerr == nil || werr.Error() != nerr.Error() {
			t.Errorf("%s: narrow error %v, want %v", name, nerr, werr)
		}
	}
}

// TestLoadNarrowLateError: an error in a rule no read needs at first comes
// out of Err once a walk reads its chain, as Load tells it; walks of other
// chains leave Err nil.
func TestLoadNarrowLateError(t *testing.T) {
	good := snapshottest.NFTablesJSON(20, 3)
	chain := snapshottest.ServiceChainNFT(7)
	for name, bad := range map[string]string{
		"bad value": `{"numgen": {"mode": "random", "mod": "three"`,
		"bad JSON":  `{"numgen": {"mode": "random", "mod": 3x`,
	} {
		rule := `"chain": "` + chain + `"`
		i := strings.Index(good, rule)
		j := strings.Index(good[i:], `{"numgen": {"mode": "random", "mod": 3`)
		if i < 0 || j < 0 {
			t.Fatal("no rule of", chain)
		}
		text := good[:i+j] + bad + good[i+j+len(`{"numgen": {"mode": "random", "mod": 3`):]
		_, werr := Loader{}.Load(nodeWith(text), "IPv4")
		if werr == nil {
			t.Fatalf("%s: Load took the bad rule", name)
		}
		pl, err := Loader{}.LoadNarrow(nodeWith(text), "IPv4")
		if err != nil {
			t.Fatalf("%s: LoadNarrow: %v", name, err)
		}
		p := pl.(*Plane)
		env := &dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}}
		var bad7, other behavior.Frontend
		for _, f := range p.Frontends() {
			switch f.Service {
			case "ns-7/svc-7:http":
				bad7 = f
			case "ns-8/svc-8:http":
				other = f
			}
		}
		p.Walker(env).Walk(probes(other)[0])
		p.Checks("node1", "nftables")
		p.Infer()
		if err := p.Err(); err != nil {
			t.Fatalf("%s: Err before the bad chain is read: %v", name, err)
		}
		p.Walker(env).Walk(probes(bad7)[0])
		if err := p.Err(); err == nil || err.Error() != werr.Error() {
			t.Errorf("%s: Err after the walk: %v, want %v", name, err, werr)
		}
		if name == "bad JSON" && !strings.Contains(werr.Error(), "line 1, column") {
			t.Errorf("error %v names no position", werr)
		}
	}
}

// lastReplaced replaces the last old in s.
func lastReplaced(s, old, new string) string {
	i := strings.LastIndex(s, old)
	return s[:i] + new + s[i+len(old):]
}

// FuzzNarrow: on any input a narrow read fails as Load does, or reads the
// same state; an error Load finds in a rule comes out of Err once every
// rule is read.
func FuzzNarrow(f *testing.F) {
	// Small seeds: the fuzzer mutates them fast.
	f.Add(`{"nftables": [{"table": {"family": "ip", "name": "kube-proxy"}}, {"map": {"family": "ip", "table": "kube-proxy", "name": "service-ips",
		"type": ["ipv4_addr", "inet_proto", "inet_service"], "map": "verdict", "elem": [[{"concat": ["10.96.0.10", "tcp", 80]}, {"goto": {"target": "service-AAAAAAAA-ns/s/tcp/p"}}]]}},
		{"set": {"family": "ip", "table": "kube-proxy", "name": "cluster-ips", "type": "ipv4_addr", "elem": ["10.96.0.10"]}},
		{"chain": {"family": "ip", "table": "kube-proxy", "name": "nat-prerouting", "type": "nat", "hook": "prerouting", "prio": -100}},
		{"chain": {"family": "ip", "table": "kube-proxy", "name": "service-AAAAAAAA-ns/s/tcp/p", "handle": 7}},
		{"rule": {"family": "ip", "table": "kube-proxy", "chain": "nat-prerouting", "expr": [{"vmap": {"key": {"concat": [{"payload": {"protocol": "ip", "field": "daddr"}},
		{"meta": {"key": "l4proto"}}, {"payload": {"protocol": "th", "field": "dport"}}]}, "data": "@service-ips"}}]}},
		{"rule": {"family": "ip", "table": "kube-proxy", "chain": "service-AAAAAAAA-ns/s/tcp/p", "expr": [{"dnat": {"family": "ip", "addr": "10.244.1.5", "port": 8080}}]}}]}`)
	f.Add(`{"nftables": [{"table": {"family": "ip", "name": "t"}}, {"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"accept": null}]}},
		{"chain": {"family": "ip", "table": "t", "name": "c", "handle": 2}}, {"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"jump": {"target": "d\u0064"}}]}}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		whole, werr := Loader{}.Load(nodeWith(text), "IPv4")
		narrow, nerr := Loader{}.LoadNarrow(nodeWith(text), "IPv4")
		if nerr != nil {
			if werr == nil || werr.Error() != nerr.Error() {
				t.Fatalf("narrow error %v, Load's %v", nerr, werr)
			}
			return
		}
		if werr == nil && (narrow == nil) != (whole == nil) {
			t.Fatalf("planes: narrow %v, whole %v", narrow, whole)
		}
		if narrow == nil {
			return
		}
		np := narrow.(*Plane)
		for _, tb := range np.rs.Tables {
			for _, c := range tb.Chains {
				c.rules()
			}
		}
		if werr != nil {
			if err := np.Err(); err == nil || err.Error() != werr.Error() {
				t.Fatalf("Err %v, Load's error %v", err, werr)
			}
			return
		}
		if err := np.Err(); err != nil {
			t.Fatalf("Err %v, Load found none", err)
		}
		wp := whole.(*Plane)
		sameState(t, "fuzz", wp.rs, np.rs)
		if got, want := np.Frontends(), wp.Frontends(); !reflect.DeepEqual(got, want) {
			t.Fatalf("frontends %+v, want %+v", got, want)
		}
		if got, want := np.Infer(), wp.Infer(); !reflect.DeepEqual(got, want) {
			t.Fatalf("infer %+v, want %+v", got, want)
		}
		if got, want := np.Checks("n", ""), wp.Checks("n", ""); !reflect.DeepEqual(got, want) {
			t.Fatalf("checks %+v, want %+v", got, want)
		}
	})
}
