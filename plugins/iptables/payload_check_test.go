package iptables

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/model"
)

// renderedPlan is the payload that writes a render over an empty node.
func renderedPlan(t *testing.T) (*Layout, []dataplane.Change, string) {
	t.Helper()
	p := port("default", "web", 2)
	p.NodePort, p.ExternallyAccessible = 30080, true
	target := mustRender(t, &model.NodeView{Family: "IPv4", Ports: []model.ServicePort{p}},
		RenderSettings{Family: "IPv4", MasqueradeBit: 14, Local: LocalDetector{Mode: "InterfaceNamePrefix", Interface: "veth"}, LocalhostNodePorts: true, NFAcct: true})
	changes := Diff(NewLayout("IPv4", nil), target, nil)
	return target, changes, Payload(changes)
}

// What a repair renders reads back as itself.
func TestCheckPayloadPassesRender(t *testing.T) {
	target, changes, payload := renderedPlan(t)
	if err := CheckPayload(target, changes, payload, true); err != nil {
		t.Fatalf("%v\n%s", err, payload)
	}
	if !strings.Contains(payload, "-I INPUT 1 ") || !strings.Contains(payload, " -i veth+ ") {
		t.Fatalf("the payload exercises no jump or interface:\n%s", payload)
	}
}

// A payload line that is not the changes', or touches what is not
// kube-proxy's, is refused.
func TestCheckPayloadRefusesInjection(t *testing.T) {
	target, changes, payload := renderedPlan(t)
	for _, c := range []struct{ name, payload, want string }{
		{"a rule in INPUT", strings.Replace(payload, "COMMIT\n", "-A INPUT -s 6.6.6.6/32 -j ACCEPT\nCOMMIT\n", 1), "not a jump to a chain of kube-proxy's"},
		{"a rule in FORWARD", strings.Replace(payload, "COMMIT\n", "-I FORWARD 1 -j ACCEPT\nCOMMIT\n", 1), "not a jump to a chain of kube-proxy's"},
		{"another jump into kube-proxy's chains", strings.Replace(payload, "COMMIT\n", "-A INPUT -s 6.6.6.6/32 -j KUBE-FIREWALL\nCOMMIT\n", 1), "not one of the jumps kube-proxy writes"},
		{"a policy", strings.Replace(payload, "COMMIT\n", ":INPUT ACCEPT [0:0]\nCOMMIT\n", 1), "not a line a repair writes"},
		{"another chain", strings.Replace(payload, "COMMIT\n", ":EVIL - [0:0]\nCOMMIT\n", 1), "chain EVIL is not kube-proxy's"},
		{"a chain deleted", strings.Replace(payload, "COMMIT\n", "-X DOCKER\nCOMMIT\n", 1), "chain DOCKER is not kube-proxy's"},
		{"a jump out of kube-proxy's chains", strings.Replace(payload, "COMMIT\n", "-A KUBE-SERVICES -j DOCKER\nCOMMIT\n", 1), "defines no chain DOCKER"},
		{"another table", payload + "*raw\n-A KUBE-SERVICES -j ACCEPT\nCOMMIT\n", "table raw is none of kube-proxy's"},
		{"a comment line", strings.Replace(payload, "COMMIT\n", "# hi\nCOMMIT\n", 1), "not a line a repair writes"},
		{"a NUL", strings.Replace(payload, "COMMIT\n", "-A KUBE-SERVICES -j RETURN\x00\nCOMMIT\n", 1), "control character"},
		{"an extra rule of kube-proxy's", strings.Replace(payload, "COMMIT\n", "-A KUBE-SERVICES -j RETURN\nCOMMIT\n", 1), "does not read back as the changes"},
		{"a rule less", strings.Replace(payload, "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n", "", 1), "lacks nat: add"},
		{"no COMMIT", strings.TrimSuffix(payload, "COMMIT\n"), "has no COMMIT"},
		{"a quote that swallows the rest", strings.Replace(payload, `--comment "default/web:http cluster IP"`, `--comment "default/web:http cluster IP`, 1), "unterminated quoted string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckPayload(target, changes, c.payload, true)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refusing to write it") {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// Issue 32's attack at the plane: a rendered rule that is several lines
// (an interface prefix read from a fake /configz) is refused, whatever
// let it through before.
func TestCheckPayloadRefusesRenderedLines(t *testing.T) {
	target, changes, _ := renderedPlan(t)
	for i, c := range changes {
		if strings.HasPrefix(c.Object, PrefixEXT) {
			changes[i].Add = append(changes[i].Add, "-A "+c.Object+" -i eth0+ -j ACCEPT\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n#+ -j KUBE-MARK-MASQ")
		}
	}
	payload := Payload(changes)
	if !strings.Contains(payload, "\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n") {
		t.Fatalf("no injection to refuse:\n%s", payload)
	}
	if err := CheckPayload(target, changes, payload, true); err == nil || !strings.Contains(err.Error(), "is not one rule of that chain") {
		t.Fatalf("error %v", err)
	}
}

// A backup's jumps are held to their form, not to the render's text: a
// rollback restores what was there.
func TestCheckPayloadBackupJumps(t *testing.T) {
	target := NewLayout("IPv4", nil)
	jump := "-A INPUT -m comment --comment \"an older kube-proxy\" -j KUBE-FIREWALL"
	changes := []dataplane.Change{
		{Table: "filter", Object: "KUBE-FIREWALL", Op: OpCreate},
		{Table: "filter", Object: "INPUT", Op: OpEdit, Add: []string{jump}},
	}
	payload := Payload(changes)
	if err := CheckPayload(target, changes, payload, false); err != nil {
		t.Fatalf("%v\n%s", err, payload)
	}
	if err := CheckPayload(target, changes, payload, true); err == nil {
		t.Fatal("a jump kube-proxy's render does not write passed as rendered")
	}
}
