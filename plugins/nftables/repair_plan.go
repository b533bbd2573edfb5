package nftables

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// The kube-proxy releases whose nftables layouts Render writes, each
// checked rule for rule against its release's real kube-proxy in the lab
// (TestReleases): nftables mode is beta and on from v1.31.
const layoutOldest, layoutNewest = 31, 37

// PlanRepair renders kube-proxy's table of the family for the view, in
// the layout of the version given, and compares it with
// the node's: the chains whose rules differ, and the sets and maps whose
// elements or declarations do (an affinity set's elements are the
// clients it pins, and are left alone). Only kube-proxy's own table is
// read, and the payload is the nft transaction that writes the changes.
func (Loader) PlanRepair(in dataplane.RepairInput) (*dataplane.RepairPlan, bool, error) {
	minor, ok := proxyrelease.Minor(in.Version)
	if !ok || minor < layoutOldest || minor > layoutNewest {
		return nil, false, fmt.Errorf("kube-proxy %s: svctrace renders the nftables layouts of %s, and a release outside them may lay its table out otherwise", in.Version, proxyrelease.Span(layoutOldest, layoutNewest))
	}
	if patch, ok := proxyrelease.Patch(in.Version); ok && minor == 33 && patch < 6 {
		// v1.33.6 took in the base chains of v1.34 (kubernetes#133969);
		// svctrace renders v1.33.6 and later, checked against v1.33.13.
		return nil, false, fmt.Errorf("kube-proxy %s: svctrace renders the nftables layout of v1.33.6 and later patch releases of v1.33, whose base chains v1.33.0 to v1.33.5 do not have", in.Version)
	}
	var dump *snapshot.Dump
	for i := range in.State.Dumps {
		if in.State.Dumps[i].Collector == CollectorJSON {
			dump = &in.State.Dumps[i]
		}
	}
	if dump == nil {
		return nil, false, nil
	}
	rs, err := Parse(dataplane.Origin(in.State.Name, dump), []byte(dump.Text))
	if err != nil {
		return nil, false, err
	}
	p := &dataplane.RepairPlan{Family: in.Family, Service: in.Service}
	current, have := ReadLayout(rs, in.Family)
	if !have {
		if len(in.View.Ports) == 0 {
			p.Notes = append(p.Notes, "kube-proxy's table of this family is absent and no Service has an address of it: left alone")
			return p, true, nil
		}
		current = newLayout(nftFamily(in.Family))
	}
	s := SettingsFrom(in.Config, in.Family, in.NodeIPs, current)
	s.Minor = minor
	if !s.localImplemented() && !s.MasqueradeAll && len(in.View.Ports) > 0 {
		p.Notes = append(p.Notes, "no cluster CIDR is known (none in kube-proxy's configuration or table): rendered without the local-traffic detector's rules, as kube-proxy does; give --cluster-cidr if the node's kube-proxy has one")
	}
	target, err := Render(in.View, s)
	if err != nil {
		return nil, false, err
	}
	p.Target = target
	p.Changes = layoutChanges(current, target, in.Service)
	if len(p.Changes) > 0 {
		p.Payload = Script(current, target, p.Changes)
		// The dry run shows the refusal a write would meet.
		if err := CheckScript(current, target, p.Changes, p.Payload); err != nil {
			return nil, false, err
		}
	}
	return p, true, nil
}

// layoutChanges are the changes that take the current table to the
// target: chains created, rewritten or deleted, sets and maps created,
// edited (elements) or deleted. With a Service, only its chains, sets and
// elements.
func layoutChanges(current, target *Layout, service string) []dataplane.Change {
	table := target.Family + " " + KubeProxyTable
	var out []dataplane.Change
	for _, name := range unionKeys(current.Chains, target.Chains) {
		svc := nameService(name)
		if service != "" && spnService(svc) != service {
			continue
		}
		have, want := current.Chains[name], target.Chains[name]
		c := dataplane.Change{Table: table, Object: name, Service: svc, Endpoints: nameEndpoints(name)}
		switch {
		case have == nil:
			c.Op, c.Add = "create", want.Rules
		case want == nil:
			c.Op, c.Remove = "delete", have.Rules
		case len(have.diff(name, want)) > 0:
			c.Op, c.Add, c.Remove = "rewrite", want.Rules, have.Rules
		default:
			continue
		}
		out = append(out, c)
	}
	for _, name := range unionKeys(current.Sets, target.Sets) {
		have, want := current.Sets[name], target.Sets[name]
		c := dataplane.Change{Table: table, Object: name, Service: nameService(name), Endpoints: nameEndpoints(name)}
		switch {
		case want == nil:
			c.Op, c.Remove = "delete", have.Elements
		case have == nil:
			c.Op, c.Add = "create", want.Elements
		case !sameDeclaration(have, want):
			c.Op, c.Add, c.Remove = "rewrite", want.Elements, have.Elements
		case strings.HasPrefix(name, prefixAffinity):
			// Its elements are the clients the packet path pins, not
			// kube-proxy's.
			continue
		default:
			c.Op = "edit"
			c.Remove, c.Add = multisetDiff(have.Elements, want.Elements)
		}
		if service != "" {
			if c.Service == "" {
				// A set every Service shares: only this Service's elements.
				c.Add = slices.DeleteFunc(c.Add, func(e string) bool { return spnService(elementService(e)) != service })
				c.Remove = slices.DeleteFunc(c.Remove, func(e string) bool { return spnService(elementService(e)) != service })
			} else if spnService(c.Service) != service {
				continue
			}
		}
		if c.Op == "edit" && len(c.Add)+len(c.Remove) == 0 {
			continue
		}
		if c.Service == "" {
			c.Service = commonService(append(slices.Clone(c.Add), c.Remove...))
		}
		out = append(out, c)
	}
	return out
}

// sameDeclaration reports whether two sets are declared alike.
func sameDeclaration(a, b *LayoutSet) bool {
	return a.IsMap == b.IsMap && slices.Equal(a.KeyType, b.KeyType) && slices.Equal(a.DataType, b.DataType) &&
		slices.Equal(a.Flags, b.Flags) && a.Timeout == b.Timeout && a.Size == b.Size && a.Comment == b.Comment
}

// nameService is the Service port ("ns/name:port") a per-service chain or
// set name belongs to, "" for kube-proxy's shared objects.
func nameService(name string) string {
	spn, _, _ := SPNFromName(name)
	return spn
}

// nameEndpoints is the endpoint ("ip:port") an endpoint chain or affinity
// set name names, if it does.
func nameEndpoints(name string) []string {
	_, ep, ok := strings.Cut(name, "__")
	if !ok {
		return nil
	}
	ip, port, ok := strings.Cut(ep, "/")
	if !ok {
		return nil
	}
	if strings.Count(ip, ".") > 3 {
		// An IPv6 address, its colons written as dots.
		return []string{"[" + strings.ReplaceAll(ip, ".", ":") + "]:" + port}
	}
	return []string{ip + ":" + port}
}

// elementService is the Service port an element of a shared map belongs
// to: its comment (no-endpoint maps) or the chain it sends to.
func elementService(e string) string {
	if _, c, ok := strings.Cut(e, ` comment "`); ok {
		c, _, _ = strings.Cut(c, `"`)
		return c
	}
	for _, f := range strings.Fields(e) {
		if s := nameService(f); s != "" {
			return s
		}
	}
	return ""
}

// commonService is the Service port every element names, or "".
func commonService(elems []string) string {
	svc := ""
	for _, e := range elems {
		s := elementService(e)
		if s == "" || svc != "" && s != svc {
			return ""
		}
		svc = s
	}
	return svc
}

// spnService is the "namespace/name" of a Service port name.
func spnService(spn string) string {
	svc := model.ParseServicePortName(spn).Service()
	return svc
}

var _ dataplane.RepairPlanner = Loader{}
