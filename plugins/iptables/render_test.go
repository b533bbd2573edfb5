package iptables

import (
	"fmt"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// The probabilities kube-proxy's statistic matches read back as, from
// real captures (1/3 is stored as 715827883/2^31).
func TestProbability(t *testing.T) {
	for n, want := range map[int]string{2: "0.50000000000", 3: "0.33333333349", 4: "0.25000000000", 5: "0.20000000019", 10: "0.10000000009"} {
		if got := probability(n); got != want {
			t.Errorf("probability(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestSaveString(t *testing.T) {
	for in, want := range map[string]string{
		"localhost_nps_accepted_pkts": " localhost_nps_accepted_pkts",
		"default/web:http":            ` "default/web:http"`,
		`say "hi"`:                    ` "say \"hi\""`,
		"":                            ` ""`,
	} {
		if got, err := saveString(in); got != want || err != nil {
			t.Errorf("saveString(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	// What iptables-restore would not read back as the same string.
	for _, in := range []string{"web\n-A INPUT -j ACCEPT", "a\x00b", "a\rb", "\xff", strings.Repeat("a", 256)} {
		if got, err := saveString(in); err == nil {
			t.Errorf("saveString(%q) = %q, want a refusal", in, got)
		}
	}
}

// A comment the renderer cannot quote is an error, never a rule.
func TestRenderRefusesUnquotable(t *testing.T) {
	p := port("default", "web", 1)
	p.Name = "web\"\n-A INPUT -j ACCEPT"
	if l, err := Render(&model.NodeView{Family: "IPv4", Ports: []model.ServicePort{p}}, RenderSettings{Family: "IPv4"}); err == nil {
		t.Fatalf("rendered:\n%s", l.Text())
	}
	for _, s := range []RenderSettings{
		{Family: "IPv4", Local: LocalDetector{Mode: "InterfaceNamePrefix", Interface: "eth0+ -j ACCEPT"}},
		{Family: "IPv4", Local: LocalDetector{Mode: "BridgeInterface", Interface: "br\"0"}},
		{Family: "IPv4", Local: LocalDetector{CIDR: "10.0.0.0/8 -j ACCEPT"}},
		{Family: "IPv4", MasqueradeBit: 32},
		{Family: "IPv4", NodePortIPs: []string{"10.0.0.1 -j ACCEPT"}},
	} {
		if _, err := Render(&model.NodeView{Family: "IPv4"}, s); err == nil {
			t.Errorf("%+v: rendered", s)
		}
	}
}

// mustRender is Render for settings and views that render.
func mustRender(t *testing.T, v *model.NodeView, s RenderSettings) *Layout {
	t.Helper()
	l, err := Render(v, s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func port(ns, name string, eps int) model.ServicePort {
	p := model.ServicePort{Namespace: ns, Name: name, PortName: "http", Protocol: "TCP", Port: 80, ClusterIP: "10.96.0.10", HasAnyEndpoints: eps > 0}
	for i := range eps {
		ep := model.Endpoint{IP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), Port: 8080, Ready: true, Serving: true}
		p.Endpoints = append(p.Endpoints, ep)
		p.ClusterEndpoints = append(p.ClusterEndpoints, ep)
	}
	return p
}

// Over 1,000 endpoints kube-proxy drops the comments of the rules below
// KUBE-SERVICES.
func TestRenderLargeCluster(t *testing.T) {
	v := &model.NodeView{Node: "n", Family: "IPv4", Ports: []model.ServicePort{port("default", "big", 1001)}}
	l := mustRender(t, v, RenderSettings{Family: "IPv4", MasqueradeBit: 14, Local: LocalDetector{CIDR: "10.244.0.0/16"}, RandomFully: true, NFAcct: true, LocalhostNodePorts: true})
	nat := l.Tables["nat"]
	svc := nat.Chains[PrefixSVC+ServiceChainHash("default/big:http", "TCP")]
	if len(svc) != 1002 {
		t.Fatalf("KUBE-SVC has %d rules, want 1002", len(svc))
	}
	if !strings.Contains(svc[0], "cluster IP") || strings.Contains(svc[1], "--comment") {
		t.Errorf("rules:\n%s\n%s", svc[0], svc[1])
	}
	if want := "-A " + EndpointChain("default/big:http", "TCP", "10.244.0.1:8080") + " -p tcp -m tcp -j DNAT --to-destination 10.244.0.1:8080"; !strings.Contains(l.Text(), want+"\n") {
		t.Errorf("no %q", want)
	}
	small := mustRender(t, &model.NodeView{Family: "IPv4", Ports: []model.ServicePort{port("default", "big", 1000)}}, RenderSettings{Family: "IPv4"})
	if strings.Contains(small.Text(), " -p tcp -m tcp -j DNAT") {
		t.Error("1,000 endpoints: comments dropped")
	}
}

func TestRenderIPv6(t *testing.T) {
	p := port("default", "v6", 0)
	p.ClusterIP = "fd00:10:96::a"
	p.NodePort = 30080
	p.ExternallyAccessible = true
	l := mustRender(t, &model.NodeView{Family: "IPv6", Ports: []model.ServicePort{p}}, RenderSettings{Family: "IPv6", MasqueradeBit: 14, LocalhostNodePorts: true, NFAcct: true})
	text := l.Text()
	for _, want := range []string{
		`-A KUBE-SERVICES -d fd00:10:96::a/128 -p tcp -m comment --comment "default/v6:http has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp6-port-unreachable`,
		`-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment "default/v6:http has no endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 30080 -j REJECT --reject-with icmp6-port-unreachable`,
		`-A KUBE-SERVICES ! -d ::1/128 -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`,
		`-A INPUT -j KUBE-FIREWALL`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no %s", want)
		}
	}
	if _, ok := l.Tables["filter"].Chains["KUBE-FIREWALL"]; ok || len(l.Tables["filter"].Kept) != 1 {
		t.Errorf("IPv6 KUBE-FIREWALL: kube-proxy keeps the chain and writes no rule of it")
	}
}

// A plan edits the chains every Service shares rule by rule, keeps the
// NodePort dispatch last, and deletes a stale chain after the rules that
// jump to it.
func TestDiffAndPayload(t *testing.T) {
	dump := func(services, extra string) string {
		return "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n" + extra +
			"-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n" + services + "COMMIT\n"
	}
	tail := `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS` + "\n"
	a := `-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/a:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA` + "\n"
	b := `-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m comment --comment "default/b:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-BBBBBBBBBBBBBBBB` + "\n"
	cur, err := ReadLayout("IPv4", dump(tail+b, ":KUBE-SVC-BBBBBBBBBBBBBBBB - [0:0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadLayout("IPv4", dump(a+tail, ""))
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(cur, want, nil)
	got := Payload(cs)
	wantPayload := "*nat\n:KUBE-SVC-BBBBBBBBBBBBBBBB - [0:0]\n" +
		"-D" + strings.TrimPrefix(b, "-A") + "-D" + strings.TrimPrefix(tail, "-A") +
		"-I KUBE-SERVICES 1" + strings.TrimPrefix(a, "-A KUBE-SERVICES") + tail +
		"-X KUBE-SVC-BBBBBBBBBBBBBBBB\nCOMMIT\n"
	if got != wantPayload {
		t.Errorf("payload:\n%s\nwant:\n%s", got, wantPayload)
	}
	// Scoped to default/a, b's rule and chain stay.
	if got := Payload(Diff(cur, want, &Scope{Service: "default/a"})); got != "*nat\n-I KUBE-SERVICES 1"+strings.TrimPrefix(a, "-A KUBE-SERVICES")+"COMMIT\n" {
		t.Errorf("scoped payload:\n%s", got)
	}
	// The same rules in another order are no change.
	if cs := Diff(want, want, nil); len(cs) != 0 {
		t.Errorf("no change expected: %+v", cs)
	}
}

func TestReadLayoutErrors(t *testing.T) {
	for text, want := range map[string]string{
		"-A KUBE-SERVICES -j ACCEPT\n":                  "line 1: ",
		"*nat\n:PREROUTING ACCEPT [0:0]\n-A FOO -j X\n": "line 3: rule of chain FOO",
		"*nat\nbogus\n": "line 2: ",
	} {
		if _, err := ReadLayout("IPv4", text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// Without kube-proxy's /configz, the NodePort dispatch it wrote tells its
// NodePort settings.
func TestSettingsReadNodePorts(t *testing.T) {
	dump := "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n" +
		`-A KUBE-SERVICES -d 192.0.2.10/32 -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS` + "\nCOMMIT\n"
	cur, err := ReadLayout("IPv4", dump)
	if err != nil {
		t.Fatal(err)
	}
	s, notes := Settings(SettingsInput{Family: "IPv4", Current: cur})
	if len(s.NodePortIPs) != 1 || s.NodePortIPs[0] != "192.0.2.10" || !s.LocalhostNodePorts {
		t.Errorf("settings %+v, notes %q", s, notes)
	}
	off := strings.Replace(dump, "-d 192.0.2.10/32", "! -d 127.0.0.0/8", 1)
	off = strings.Replace(off, "-j KUBE-NODEPORTS", "-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS", 1)
	if cur, err = ReadLayout("IPv4", off); err != nil {
		t.Fatal(err)
	}
	s, notes = Settings(SettingsInput{Family: "IPv4", Current: cur})
	if s.NodePortIPs != nil || s.LocalhostNodePorts {
		t.Errorf("settings %+v, notes %q", s, notes)
	}
	// What /configz tells wins.
	s, _ = Settings(SettingsInput{Family: "IPv4", Current: cur, Config: snapshot.ProxyConfig{Source: "configz"}})
	if !s.LocalhostNodePorts {
		t.Errorf("configz's defaults were overridden: %+v", s)
	}
}

// Comments on the rules into endpoints come and go with kube-proxy's
// large cluster mode: they are no difference.
func TestSameRulesIgnoresEndpointComments(t *testing.T) {
	with := []string{`-A KUBE-SVC-AAAAAAAAAAAAAAAA -m comment --comment "default/a:http -> 10.0.0.1:80" -j KUBE-SEP-BBBBBBBBBBBBBBBB`}
	without := []string{`-A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB`}
	if !sameRules("KUBE-SVC-AAAAAAAAAAAAAAAA", with, without) {
		t.Error("a dispatch rule's comment made a difference")
	}
	sep := []string{`-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment "default/a:http" -m tcp -j DNAT --to-destination 10.0.0.1:80`}
	if !sameRules("KUBE-SEP-BBBBBBBBBBBBBBBB", sep, []string{`-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80`}) {
		t.Error("an endpoint rule's comment made a difference")
	}
	if sameRules("KUBE-SEP-BBBBBBBBBBBBBBBB", sep, []string{`-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 10.0.0.2:80`}) {
		t.Error("another endpoint made no difference")
	}
	masq := []string{`-A KUBE-SVC-AAAAAAAAAAAAAAAA ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment "default/a:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`}
	if sameRules("KUBE-SVC-AAAAAAAAAAAAAAAA", masq, []string{`-A KUBE-SVC-AAAAAAAAAAAAAAAA ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-MARK-MASQ`}) {
		t.Error("the ClusterIP masquerade rule's comment is always written")
	}
}
