package ipvs

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/snapshot"
)

// planWith plans a repair of the lab's node toward the test view, with
// kube-proxy's local-traffic detector going by a bridge interface.
func planWith(t *testing.T, bridge string) (*dataplane.RepairPlan, error) {
	t.Helper()
	p, _, err := Loader{}.PlanRepair(dataplane.RepairInput{State: labNode(t), Family: "IPv4", View: testView(), Version: "v1.36.3",
		Config: snapshot.ProxyConfig{DetectLocalMode: "BridgeInterface", BridgeInterface: bridge}})
	return p, err
}

// TestPlanChecksRulesPayload: the iptables part of an ipvs-mode plan is
// read back before it is shown or written. A bridge name that would end
// kube-proxy's masquerade rule and add one of its own to filter INPUT
// (a value of the node's configuration, which svctrace does not write)
// makes the plan refuse, in the dry run already; a plain one passes.
func TestPlanChecksRulesPayload(t *testing.T) {
	p, err := planWith(t, "cni0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Payload, "-A KUBE-SERVICES ! -i cni0 -m comment") {
		t.Fatalf("the plan's payload lacks the masquerade rule by interface:\n%s", p.Payload)
	}
	for _, bridge := range []string{"cni0\nCOMMIT\n*filter\n-I INPUT 1 -j ACCEPT\nCOMMIT\n*nat\n-A KUBE-SERVICES -j RETURN", "cni0 -j ACCEPT"} {
		p, err := planWith(t, bridge)
		if err == nil || !strings.Contains(err.Error(), "refusing to write it") {
			payload := ""
			if p != nil {
				payload = p.Payload
			}
			t.Errorf("bridge %q: error %v, want a refusal; payload:\n%s", bridge, err, payload)
		}
	}
}

// TestCheckRulesRefusesTampering: a delta whose iptables payload is not
// the one its changes make (as a job file edited between the plan and the
// writer would give), or whose render jumps out of ipvs mode's chains,
// is refused.
func TestCheckRulesRefusesTampering(t *testing.T) {
	tg := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14, RandomFully: true,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	cur := &State{Sets: &IPSets{Sets: map[string]*IPSet{}}, Rules: iptables.NewLayout("IPv4", Ownership)}
	d := diff(cur, tg, "")
	if d.rulesPayload == "" {
		t.Fatal("the render writes no rules")
	}
	if err := d.checkRules(); err != nil {
		t.Fatalf("the render's own payload: %v\n%s", err, d.rulesPayload)
	}
	payload := d.rulesPayload
	for _, c := range []struct{ name, payload, want string }{
		{"a rule in INPUT", strings.Replace(payload, "COMMIT\n", "-A INPUT -s 6.6.6.6/32 -j ACCEPT\nCOMMIT\n", 1), "not a jump to a chain of kube-proxy's"},
		{"an iptables-mode chain", strings.Replace(payload, "COMMIT\n", ":KUBE-NODEPORTS - [0:0]\nCOMMIT\n", 1), "chain KUBE-NODEPORTS is not kube-proxy's"},
		{"a rule less", strings.Replace(payload, "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n", "", 1), "lacks nat: add"},
	} {
		d.rulesPayload = c.payload
		if err := d.checkRules(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	tg.Rules.Tables["nat"].Chains["KUBE-SERVICES"] = append(tg.Rules.Tables["nat"].Chains["KUBE-SERVICES"], "-A KUBE-SERVICES -j DOCKER")
	if err := diff(cur, tg, "").checkRules(); err == nil || !strings.Contains(err.Error(), "DOCKER") {
		t.Errorf("a render jumping to another component's chain: error %v", err)
	}
}
