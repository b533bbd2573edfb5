package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/suggest"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// RulesOptions steer a rules plan.
type RulesOptions struct {
	Node string
	// Service, "namespace/name", limits the plan to that Service's
	// chains and rules.
	Service string
	// KubeProxyVersion is the version whose layout to render when the
	// node does not tell it (or to override what it tells).
	KubeProxyVersion string
	// Backend is the iptables backend to write (legacy or nf_tables),
	// when the node's rules do not show which kube-proxy uses.
	Backend string
}

// RulesPlan is what reconcile rules would change on a node: per IP
// family, the differences between kube-proxy's part of the kernel and the
// layout kube-proxy would program, and the drift findings each fixes.
type RulesPlan struct {
	metav1.TypeMeta `json:",inline"`
	Node            string `json:"node"`
	Mode            string `json:"mode"`
	// KubeProxyVersion is the layout rendered, and VersionSource where
	// the version came from.
	KubeProxyVersion string             `json:"kubeProxyVersion"`
	VersionSource    string             `json:"versionSource"`
	Service          string             `json:"service,omitempty"`
	Families         []FamilyPlan       `json:"families"`
	Findings         []behavior.Finding `json:"findings,omitempty"`
	Notes            []string           `json:"notes,omitempty"`
	// Apply is what --apply did, when it ran.
	Apply *RulesApply `json:"apply,omitempty"`
	// Refused says --apply was refused before anything was written (a
	// running kube-proxy, the node's lock, the backup): the error says why.
	Refused bool `json:"refused,omitempty"`
}

// DeepCopyObject implements runtime.Object for the printers.
func (p *RulesPlan) DeepCopyObject() runtime.Object {
	return analysis.DeepCopyReport(p, &RulesPlan{})
}

// FamilyPlan is one IP family's part of a plan.
type FamilyPlan struct {
	Family  string          `json:"family"`
	Backend string          `json:"backend,omitempty"`
	Changes []PlannedChange `json:"changes,omitempty"`
	// Payload is what the plane writes to make the changes.
	Payload string `json:"payload,omitempty"`
	plan    *dataplane.RepairPlan
}

// PlannedChange is one change, with the findings it fixes.
type PlannedChange struct {
	dataplane.Change
	Fixes []string `json:"fixes,omitempty"`
}

// Changes counts the plan's changes over every family.
func (p *RulesPlan) Changes() int {
	n := 0
	for _, f := range p.Families {
		n += len(f.Changes)
	}
	return n
}

// PlanRules works out the repair of a node's kube-proxy rules from a
// snapshot that holds the node's kernel state and the API objects.
func PlanRules(s *snapshot.Snapshot, o RulesOptions) (*RulesPlan, error) {
	ns, ok := s.Node(o.Node)
	if !ok {
		var names []string
		for _, n := range s.Nodes {
			names = append(names, n.Name)
		}
		return nil, fmt.Errorf("node %q is not in the snapshot; %s", o.Node, suggest.Hint(o.Node, names, "nodes in the snapshot"))
	}
	if s.Cluster == nil {
		return nil, errors.New("a repair renders kube-proxy's rules from the API objects: the snapshot has none")
	}
	if err := validateConfig("node "+o.Node+": kube-proxy's configuration", ns.KubeProxy, ""); err != nil {
		return nil, err
	}
	if err := validateServices(s.Cluster); err != nil {
		return nil, err
	}
	p := &RulesPlan{TypeMeta: analysis.NewTypeMeta("RulesPlan"), Node: o.Node, Service: o.Service}
	nodeVersion, nodeSource := analysis.ProxyVersion(s, o.Node)
	version, source, err := layoutVersion(nodeVersion, nodeSource, o.KubeProxyVersion)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", o.Node, err)
	}
	p.KubeProxyVersion, p.VersionSource = version, source
	for _, family := range []string{"IPv4", "IPv6"} {
		fp, findings, ok, err := planFamily(s, ns, family, p, o)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		p.Families = append(p.Families, fp)
		p.Findings = append(p.Findings, findings...)
	}
	if len(p.Families) == 0 {
		return nil, fmt.Errorf("node %s: the snapshot holds no dump of kube-proxy's rules there, which a repair starts from", o.Node)
	}
	return p, nil
}

// planFamily plans one family with the plane of the node's mode; ok false
// when the node has no state of that plane for the family.
func planFamily(s *snapshot.Snapshot, ns *snapshot.NodeState, family string, p *RulesPlan, o RulesOptions) (FamilyPlan, []behavior.Finding, bool, error) {
	var fp FamilyPlan
	if !hasFamily(ns, family) {
		return fp, nil, false, nil
	}
	a, err := analysis.Analyze(s, o.Node, family)
	if err != nil {
		return fp, nil, false, err
	}
	if a.View == nil {
		return fp, nil, false, errors.New("a repair renders kube-proxy's rules from the API objects: the snapshot has none")
	}
	mode := a.Config.Mode
	if mode == "" && a.Plane != nil {
		mode = a.Plane.Mode()
	}
	if mode == "" {
		mode = "iptables"
	}
	if p.Mode != "" && p.Mode != mode {
		// One kube-proxy programs both families in one mode: a plan must
		// not write another mode's state in one of them.
		return fp, nil, false, fmt.Errorf("node %s: kube-proxy's objects show %s mode in one IP family and %s mode in the other, and its configuration (its /configz; collect --proxy-mode for a snapshot) does not say which it runs: svctrace does not guess which to write", o.Node, p.Mode, mode)
	}
	r, err := repairer(mode)
	if err != nil {
		return fp, nil, false, fmt.Errorf("node %s: %w", o.Node, err)
	}
	p.Mode = mode
	if o.Service != "" {
		nsName, name, _ := strings.Cut(o.Service, "/")
		if !serviceExists(s.Cluster, nsName, name) {
			return fp, nil, false, fmt.Errorf("service %s is not in the API objects; %s", o.Service, suggest.Hint(o.Service, serviceNames(s.Cluster), "Services"))
		}
	}
	var podCIDRs []string
	for _, n := range s.Cluster.Nodes {
		if n.Name == o.Node {
			podCIDRs = n.Spec.PodCIDRs
		}
	}
	in := dataplane.RepairInput{
		State: ns, Family: family, View: a.View, Config: a.Config, Version: p.KubeProxyVersion,
		NodeIPs: addrStrings(a.NodeIPs), LocalAddrs: addrStrings(a.LocalAddrs), PodCIDRs: podCIDRs,
		Service: o.Service, Backend: o.Backend,
	}
	// Nothing a plane renders reaches it unchecked.
	if err := validateRepairInput(in); err != nil {
		return fp, nil, false, err
	}
	plan, ok, err := r.PlanRepair(in)
	if err != nil {
		return fp, nil, false, fmt.Errorf("node %s, %s: %w", o.Node, family, err)
	}
	if !ok {
		return fp, nil, false, nil
	}
	for _, n := range plan.Notes {
		p.Notes = append(p.Notes, family+": "+n)
	}
	findings := a.Findings
	if o.Service != "" {
		findings = slices.DeleteFunc(slices.Clone(findings), func(f behavior.Finding) bool { return serviceOf(f.Service) != o.Service })
	}
	fp = FamilyPlan{Family: family, Backend: plan.Backend, Payload: plan.Payload, plan: plan}
	for _, c := range plan.Changes {
		fp.Changes = append(fp.Changes, PlannedChange{Change: c, Fixes: fixes(c, findings)})
	}
	return fp, findings, true, nil
}

// repairer is the plane that plans the repair of a mode.
func repairer(mode string) (dataplane.RepairPlanner, error) {
	for _, l := range plugins.Loaders() {
		if l.Mode() != mode {
			continue
		}
		if r, ok := l.(dataplane.RepairPlanner); ok {
			return r, nil
		}
	}
	return nil, fmt.Errorf("kube-proxy runs in %s mode there: reconcile rules does not render that mode yet", mode)
}

// writer is the plane that writes the repair of a mode.
func writer(mode string) (dataplane.Repairer, error) {
	r, err := repairer(mode)
	if err != nil {
		return nil, err
	}
	if w, ok := r.(dataplane.Repairer); ok {
		return w, nil
	}
	return nil, fmt.Errorf("reconcile rules --apply does not write kube-proxy's %s mode yet: the plan lists what a repair would change", mode)
}

// WriteDetached is the writing process of a mode whose plane writes in
// one (dataplane.DetachedWriter): it makes the writes of the job file.
func WriteDetached(ctx context.Context, mode, file string) error {
	w, err := writer(mode)
	if err != nil {
		return err
	}
	d, ok := w.(dataplane.DetachedWriter)
	if !ok {
		return fmt.Errorf("kube-proxy's %s mode is written in svctrace's own process", mode)
	}
	return d.WriteDetached(ctx, file)
}

// hasFamily reports whether the node's state has a dump of the family, or
// one for every family.
func hasFamily(ns *snapshot.NodeState, family string) bool {
	for _, d := range ns.Dumps {
		if d.Family == family || d.Family == "" {
			return true
		}
	}
	return false
}

// fixes names the findings a change bears on: those of its Service port,
// or of the endpoints it sends to when it does (an orphaned chain's
// finding names only its endpoint).
func fixes(c dataplane.Change, findings []behavior.Finding) []string {
	var out []string
	for _, f := range findings {
		hit := c.Service != "" && (f.Service == c.Service || f.Service == serviceOf(c.Service))
		if hit && f.Endpoint != "" && len(c.Endpoints) > 0 {
			hit = slices.Contains(c.Endpoints, f.Endpoint)
		}
		if c.Service == "" && len(c.Endpoints) > 0 && f.Endpoint != "" && f.Service == "" {
			hit = slices.Contains(c.Endpoints, f.Endpoint)
		}
		if hit {
			out = append(out, describeFinding(f))
		}
	}
	return out
}

// serviceOf is the "namespace/name" of a Service port name.
func serviceOf(spn string) string {
	svc := model.ParseServicePortName(spn).Service()
	return svc
}

func describeFinding(f behavior.Finding) string {
	s := f.Type
	if f.Service != "" {
		s += " " + f.Service
	}
	if len(f.Frontends) > 0 {
		s += " " + strings.Join(f.Frontends, ", ")
	}
	if f.Endpoint != "" {
		s += " endpoint " + f.Endpoint
	}
	return s
}

// layoutVersion picks the version whose layout to render: the one given,
// else the node's (the plane refuses one whose layout it does not know).
func layoutVersion(node, nodeSource, given string) (version, source string, err error) {
	version, source = node, nodeSource
	if given != "" {
		version, source = given, "--kube-proxy-version"
	}
	if version == "" {
		return "", "", errors.New("kube-proxy's version is unknown (its /metrics did not answer, no kube-proxy Pod on the node names it, and the node is no k3s or RKE2 node): give the version running there with --kube-proxy-version")
	}
	return version, source, nil
}

func addrStrings(as []netip.Addr) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

func serviceExists(c *snapshot.Cluster, ns, name string) bool {
	for _, s := range c.Services {
		if s.Namespace == ns && s.Name == name {
			return true
		}
	}
	return false
}

func serviceNames(c *snapshot.Cluster) []string {
	var out []string
	for _, s := range c.Services {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}
