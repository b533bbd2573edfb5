package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestScenarioEditErrors checks that an edit which would leave the capture
// as it was is an error naming the scenario file and the edit's line, so
// that no scenario can pass without testing what it says.
func TestScenarioEditErrors(t *testing.T) {
	const ipt = "c testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt\n"
	const nft = "c testdata/kube-proxy-v1.33.13/two-nodes/node2.nft.json\n"
	for _, c := range []struct {
		name, capture, sections string
		line                    int // of the edit named in the error
		want                    string
	}{
		{"iptables line absent", ipt, "-- rules.edit --\n- -A KUBE-SERVICES -j NOWHERE\n", 5, `matches no line of the dump`},
		{"iptables regexp absent", ipt, "-- rules.edit --\n# a comment\n-~ ^-A KUBE-NOPE \n", 6, `matches no line of the dump`},
		{"iptables line twice", ipt, "-- rules.edit --\n= COMMIT\n", 5, `matches 3 lines of the dump`},
		{"add without a place", ipt, "-- rules.edit --\n+ -A KUBE-SERVICES -j RETURN\n", 5, `+ needs a line before it`},
		{"replaced by itself", ipt, "-- rules.edit --\n- :KUBE-MARK-MASQ - [0:0]\n+ :KUBE-MARK-MASQ - [0:0]\n", 5, `change nothing`},
		{"nft rule absent", nft, "-- rules.edit --\n- rule ip kube-proxy services handle 9999\n", 5, `matches no rule of the dump`},
		{"nft element absent", nft, "-- rules.edit --\n- element ip kube-proxy service-ips 10.96.7.7 . tcp . 80\n", 5, `has no element "10.96.7.7 . tcp . 80"`},
		{"nft regexp", nft, "-- rules.edit --\n-~ nginx\n", 5, `by address, not by regular expression`},
		{"object absent", ipt, "-- objects.patch --\npatch:\n- object: Service default/nope\n  merge: {spec: {sessionAffinity: ClientIP}}\n", 6, `patch Service default/nope: no such object`},
		{"object unchanged", ipt, "-- objects.patch --\npatch:\n- object: Service default/nginx\n  merge: {spec: {sessionAffinity: None}}\n", 6, `changes nothing`},
		{"field misspelt", ipt, "-- objects.patch --\npatch:\n- object: Service default/nginx\n  merge: {spec: {sessionAfinity: ClientIP}}\n", 6, `unknown field "sessionAfinity"`},
		{"delete absent", ipt, "-- objects.patch --\ndelete:\n- Service default/nope\n", 6, `delete Service default/nope: no such object`},
		{"add existing", ipt, "-- objects.patch --\nadd:\n- {apiVersion: v1, kind: Service, metadata: {name: nginx, namespace: default}}\n", 6, `it exists already`},
		{"section misspelt", ipt, "-- rules.edits --\n- COMMIT\n", 4, `unknown section rules.edits`},
		{"capture unknown", ipt, "-- rules.edit.d --\n- COMMIT\n", 4, `names no capture of this scenario`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "case.txtar")
			text := "What the case is about.\n-- capture --\n" + c.capture + c.sections + "-- cmd --\ndrift\n"
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := readScenario(path)
			if err == nil {
				_, err = sc.run(t, sc.captures[0])
			}
			if err == nil {
				t.Fatalf("no error, want %q at line %d", c.want, c.line)
			}
			pos := path + ":" + strconv.Itoa(c.line) + ":"
			if !strings.Contains(err.Error(), pos) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q naming %s", err, c.want, pos)
			}
		})
	}
}
