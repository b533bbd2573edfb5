package nftables

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/model"
)

// testPort is a Service port with two endpoints, a NodePort and a load
// balancer with source ranges.
func testPort(name string) model.ServicePort {
	p := model.ServicePort{Namespace: "default", Name: name, PortName: "http", Protocol: "TCP", Port: 80, NodePort: 30080,
		ClusterIP: "10.96.0.10", LoadBalancerIPs: []string{"203.0.113.7"}, LoadBalancerSourceRanges: []string{"198.51.100.0/24"},
		ExternallyAccessible: true, HasAnyEndpoints: true, AffinityTimeoutSeconds: 10800}
	for _, ip := range []string{"10.244.1.10", "10.244.2.10"} {
		ep := model.Endpoint{IP: ip, Port: 8080, Ready: true, Serving: true}
		p.Endpoints = append(p.Endpoints, ep)
		p.ClusterEndpoints = append(p.ClusterEndpoints, ep)
	}
	return p
}

// scriptOverEmpty is the script that writes a render over a node without
// kube-proxy's table.
func scriptOverEmpty(t *testing.T, s RenderSettings) (*Layout, *Layout, []dataplane.Change, string) {
	t.Helper()
	target, err := Render(&model.NodeView{Family: "IPv4", Ports: []model.ServicePort{testPort("web")}}, s)
	if err != nil {
		t.Fatal(err)
	}
	current := newLayout("ip")
	changes := layoutChanges(current, target, "")
	return current, target, changes, Script(current, target, changes)
}

var testSettings = RenderSettings{Family: "IPv4", MasqueradeBit: 14, LocalIface: "veth*", ServiceCIDRs: []string{"10.96.0.0/16"}, NodePortIPs: []string{"192.0.2.10"}}

// What a repair renders reads back as itself, in both layouts.
func TestCheckScriptPassesRender(t *testing.T) {
	for _, minor := range []int{33, 36} {
		s := testSettings
		s.Minor = minor
		current, target, changes, script := scriptOverEmpty(t, s)
		if err := CheckScript(current, target, changes, script); err != nil {
			t.Fatalf("v1.%d: %v\n%s", minor, err, script)
		}
		if !strings.Contains(script, `iifname != "veth*"`) || !strings.Contains(script, "hook input priority 0") {
			t.Fatalf("the script exercises no interface or hook:\n%s", script)
		}
	}
}

// A command that is not the changes', or touches what is not kube-proxy's
// table, is refused.
func TestCheckScriptRefusesInjection(t *testing.T) {
	current, target, changes, script := scriptOverEmpty(t, testSettings)
	for _, c := range []struct{ name, add, want string }{
		{"another table", "table ip evil { chain c { type filter hook input priority 0; accept; } }", "table ip is not a command a repair writes"},
		{"another table by name", "add table ip evil", "is not kube-proxy's table"},
		{"the other family", `add table ip6 kube-proxy { comment "rules for kube-proxy" ; }`, "is not kube-proxy's table"},
		{"another hook", "add chain ip kube-proxy evil { type filter hook input priority -500 ; }", "none of kube-proxy's base chains"},
		{"a policy", "add chain ip kube-proxy filter-input { type filter hook input priority 0 ; policy drop ; }", "not in a declaration a repair writes"},
		{"a rule in a base chain", "add rule ip kube-proxy filter-input accept", "not one of kube-proxy's jumps"},
		{"the table deleted", "delete table ip kube-proxy", "not a command a repair writes"},
		{"the ruleset flushed", "flush ruleset", "not a command a repair writes"},
		{"another table's chain", "add rule ip filter INPUT accept", "is not kube-proxy's table"},
		{"a comment", "# hi", "a comment"},
		{"two commands on a line", "add rule ip kube-proxy services accept; add table ip evil", "is not kube-proxy's table"},
		{"an extra rule of kube-proxy's", "add rule ip kube-proxy services accept", "none of the changes"},
		{"an open quote", `add rule ip kube-proxy services comment "x`, "quoted string left open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckScript(current, target, changes, script+c.add+"\n")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refusing to write it") {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	lines := strings.Split(strings.TrimSpace(script), "\n")
	short := strings.Join(lines[:len(lines)-1], "\n") + "\n"
	if err := CheckScript(current, target, changes, short); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("a command less: %v", err)
	}
}

// Issue 32's attack at the plane: a rendered string nft's quoting cannot
// hold makes a command of its own, and is refused whatever let it
// through before.
func TestCheckScriptRefusesRenderedCommands(t *testing.T) {
	current, target, changes, _ := scriptOverEmpty(t, testSettings)
	for i, c := range changes {
		if c.Object == "services" {
			changes[i].Add = append(changes[i].Add, "iifname \"\"; }\ntable ip evil { chain c { type filter hook input priority 0; accept; } }\n#\" accept")
		}
	}
	script := Script(current, target, changes)
	if !strings.Contains(script, "\ntable ip evil {") {
		t.Fatalf("no injection to refuse:\n%s", script)
	}
	if err := CheckScript(current, target, changes, script); err == nil || !strings.Contains(err.Error(), "refusing to write it") {
		t.Fatalf("error %v", err)
	}
}

// nft has no escape: a string it cannot quote is refused, in a setting
// or in a Service's names, and Render writes nothing.
func TestRenderRefusesUnquotable(t *testing.T) {
	for _, s := range []string{`a"b`, "a\nb", "a\x00b", strings.Repeat("a", 129), "\xff"} {
		if q, err := nftString(s); err == nil {
			t.Errorf("nftString(%q) = %s", s, q)
		}
	}
	if q, err := nftString("default/web:http"); err != nil || q != `"default/web:http"` {
		t.Errorf("nftString: %s, %v", q, err)
	}
	bad := testSettings
	bad.LocalIface = "\"; }\ntable ip evil { chain c { type filter hook input priority 0; accept; } }\n#"
	if _, err := Render(&model.NodeView{Family: "IPv4"}, bad); err == nil {
		t.Error("rendered an interface with a quote")
	}
	p := testPort("web\"\nadd table ip evil\n#")
	if _, err := Render(&model.NodeView{Family: "IPv4", Ports: []model.ServicePort{p}}, testSettings); err == nil {
		t.Error("rendered a Service name with a quote")
	}
}
