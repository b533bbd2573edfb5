package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importNFT writes a snapshot of node2 from a capture's nftables ruleset,
// edited by edit when it is not nil.
func importNFT(t *testing.T, version string, edit func(string) string) string {
	t.Helper()
	dir := "../../testdata/kube-proxy-" + version + "/two-nodes/"
	data, err := os.ReadFile(dir + "node2.nft.json")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
		if text == string(data) {
			t.Fatal("the edit changed nothing")
		}
	}
	tmp := t.TempDir()
	nft := filepath.Join(tmp, "node2.nft.json")
	if err := os.WriteFile(nft, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(tmp, "snap.yaml")
	if _, stderr, code := run(t, "collect", "--node", "node2", "--objects", dir+"objects.yaml", "--nft-json", nft, "-f", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	return snap
}

func TestNFTablesCaptures(t *testing.T) {
	for _, v := range []string{"v1.36.3", "v1.33.13"} {
		t.Run(v, func(t *testing.T) {
			snap := importNFT(t, v, nil)
			if out, stderr, code := run(t, "drift", "--snapshot", snap); code != 0 {
				t.Fatalf("drift: exit %d, want 0:\n%s%s", code, out, stderr)
			}
			out, _, code := run(t, "explain", "default/nginx", "--snapshot", snap)
			if code != 0 {
				t.Fatalf("explain nginx: exit %d", code)
			}
			for _, ep := range []string{"10.244.0.5:8080", "10.244.0.6:8080", "10.244.1.7:8080"} {
				if !strings.Contains(out, "1/3   "+ep) {
					t.Errorf("nginx: backend %s at 1/3 missing:\n%s", ep, out)
				}
			}
			out, _, code = run(t, "explain", "shop/cart:http", "--snapshot", snap, "-o", "json")
			if code != 0 {
				t.Fatalf("explain cart: exit %d", code)
			}
			var r struct {
				Frontends []struct {
					Key struct {
						Kind string `json:"kind"`
					} `json:"key"`
					Affinity *struct {
						TimeoutSeconds int `json:"timeoutSeconds"`
					} `json:"affinity"`
					SourceRanges []string `json:"sourceRanges"`
					Outcomes     map[string]struct {
						Verdict  string `json:"verdict"`
						Backends []struct {
							Endpoint string `json:"endpoint"`
						} `json:"backends"`
					} `json:"outcomes"`
				} `json:"frontends"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			seenLB := false
			for _, f := range r.Frontends {
				if f.Affinity == nil || f.Affinity.TimeoutSeconds != 10800 {
					t.Errorf("%s: affinity %+v, want ClientIP 10800s", f.Key.Kind, f.Affinity)
				}
				if f.Key.Kind != "LoadBalancer" {
					continue
				}
				seenLB = true
				if len(f.SourceRanges) != 1 || f.SourceRanges[0] != "203.0.113.0/24" {
					t.Errorf("LB source ranges %v", f.SourceRanges)
				}
				ext := f.Outcomes["external"]
				if ext.Verdict != "forward" || len(ext.Backends) != 1 || ext.Backends[0].Endpoint != "10.244.1.21:8080" {
					t.Errorf("LB from outside: %+v, want only node2's local endpoint", ext)
				}
				if f.Outcomes["pod"].Verdict != "drop" {
					t.Errorf("LB from a pod outside the source ranges: %+v, want drop", f.Outcomes["pod"])
				}
			}
			if !seenLB {
				t.Error("no LoadBalancer frontend explained")
			}
		})
	}
}

// Deleting default/nginx's service-ips element from the capture gives one
// MissingFrontend for it and nothing else.
func TestNFTablesDeletedElement(t *testing.T) {
	for _, v := range []string{"v1.36.3", "v1.33.13"} {
		t.Run(v, func(t *testing.T) {
			snap := importNFT(t, v, deleteServiceIPsElement(t, "10.96.94.233"))
			out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s%s", code, out, stderr)
			}
			r := decodeDrift(t, out)
			if len(r.Findings) != 1 {
				t.Fatalf("want one finding, got %+v", r.Findings)
			}
			f := r.Findings[0]
			if f.Type != "MissingFrontend" || f.Service != "default/nginx:http" || f.Node != "node2" {
				t.Errorf("finding = %+v", f)
			}
		})
	}
}

// deleteServiceIPsElement removes the service-ips map element of a
// ClusterIP from an nft -j ruleset.
func deleteServiceIPsElement(t *testing.T, ip string) func(string) string {
	return func(text string) string {
		var doc struct {
			Nftables []map[string]json.RawMessage `json:"nftables"`
		}
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatal(err)
		}
		for _, obj := range doc.Nftables {
			raw, ok := obj["map"]
			if !ok {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if m["name"] != "service-ips" || m["family"] != "ip" {
				continue
			}
			elems, _ := m["elem"].([]any)
			var keep []any
			for _, e := range elems {
				b, _ := json.Marshal(e)
				if !strings.Contains(string(b), `"`+ip+`"`) {
					keep = append(keep, e)
				}
			}
			if len(keep) == len(elems) {
				t.Fatalf("no service-ips element for %s", ip)
			}
			m["elem"] = keep
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			obj["map"] = b
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// TestNFTablesTextForm: the text form of nft list ruleset, given under
// --nft-json, is read, and explain and drift answer as for the JSON form
// (but for how a rule is named: by handle in the JSON form, by line in
// the text form, which prints no handles).
func TestNFTablesTextForm(t *testing.T) {
	ref := regexp.MustCompile(`(handle \d+|at line \d+)`)
	for _, v := range []string{"v1.36.3", "v1.33.13"} {
		dir := "../../testdata/kube-proxy-" + v + "/two-nodes/"
		answers := map[string]string{}
		for _, form := range []string{"json", "txt"} {
			snap := filepath.Join(t.TempDir(), "s.yaml")
			if _, stderr, code := run(t, "collect", "--node", "node2", "--objects", dir+"objects.yaml", "--nft-json", dir+"node2.nft."+form, "-f", snap); code != 0 {
				t.Fatalf("%s %s: collect: exit %d: %s", v, form, code, stderr)
			}
			explain, _, _ := run(t, "explain", "--snapshot", snap, "-A", "--node", "node2")
			drift, _, code := run(t, "drift", "--snapshot", snap, "--node", "node2")
			answers[form] = ref.ReplaceAllString(explain+drift+fmt.Sprint(code), "RULE")
		}
		if answers["json"] != answers["txt"] {
			t.Errorf("%s: the text form answers\n%s\nthe JSON form\n%s", v, answers["txt"], answers["json"])
		}
	}
}

// iptables chains of kube-proxy next to its nftables table are leftovers of
// iptables mode, where a packet enters them (nat, filter); mangle holds
// only the KUBE-PROXY-CANARY chain, which nothing leads to: a note.
func TestNFTablesWithIPTablesLeftovers(t *testing.T) {
	dir := "../../testdata/kube-proxy-v1.36.3/two-nodes/"
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	if _, stderr, code := run(t, "collect", "--node", "node2", "--objects", dir+"objects.yaml", "--nft-json", dir+"node2.nft.json",
		"--iptables-save", dir+"node1.iptables-save.txt", "-f", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	r := decodeDrift(t, out)
	if r.Nodes[0].Mode != "nftables" {
		t.Errorf("mode %q, want nftables", r.Nodes[0].Mode)
	}
	tables := map[string]bool{}
	for _, f := range r.Findings {
		if f.Type != "LeftoverRules" {
			t.Errorf("unexpected finding %+v", f)
			continue
		}
		tables[strings.TrimSuffix(strings.Fields(f.Observed)[3], ":")] = true
	}
	for _, want := range []string{"nat", "filter"} {
		if !tables[want] {
			t.Errorf("no LeftoverRules for iptables table %s: %+v", want, r.Findings)
		}
	}
	if tables["mangle"] || !strings.Contains(strings.Join(r.Notes, "\n"), "table mangle still holds kube-proxy chains of iptables mode that no packet enters (KUBE-PROXY-CANARY)") {
		t.Errorf("mangle's canary chain: findings %+v, notes %q", r.Findings, r.Notes)
	}
}

// The chains a kubelet writes on every node (the hint of the iptables
// backend, its canary, KUBE-FIREWALL) are no leftover of iptables mode beside
// kube-proxy's nftables table: the capture is of a real kubelet's node.
func TestNFTablesWithKubeletChains(t *testing.T) {
	dir := "../../testdata/kube-proxy-v1.36.3/two-nodes/"
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	if _, stderr, code := run(t, "collect", "--node", "node2", "--objects", dir+"objects.yaml", "--nft-json", dir+"node2.nft.json",
		"--iptables-save", "../../testdata/kubelet-v1.36.3/iptables-nft-save.txt", "-f", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (no drift): %s\n%s", code, out, stderr)
	}
	if r := decodeDrift(t, out); len(r.Findings) != 0 || r.Nodes[0].Mode != "nftables" {
		t.Errorf("mode %q, findings %+v; want nftables and none", r.Nodes[0].Mode, r.Findings)
	}
}
