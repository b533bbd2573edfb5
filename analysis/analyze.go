// Package analysis answers svctrace's questions about a node: what kube-proxy
// should have programmed there (expected), what the kernel does (observed,
// by walking the node's data plane), where the two differ (drift findings),
// and which live connections go where (conntrack correlation). Every
// consumer (CLI, agent, TUI, repair) calls its entry points: Analyze for
// one node, Drift for a report over nodes.
package analysis

import (
	"fmt"
	"github.com/svctrace/svctrace/internal/wording"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/suggest"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
	"k8s.io/apimachinery/pkg/types"
)

// NodeAnalysis is everything svctrace derives for one node and IP family:
// the parsed rules, kube-proxy's settings, the model's view, and the
// expected and observed behaviour.
type NodeAnalysis struct {
	Node   string
	Family string
	// Config is kube-proxy's settings as told by the snapshot, completed
	// from the rules (Config.Inferred says what was inferred).
	Config snapshot.ProxyConfig
	// Release is the model of kube-proxy's release the node is analysed
	// with (see ProxyVersion).
	Release proxyrelease.Release
	// View is nil without API objects (a bare dump).
	View *model.NodeView
	// Plane is the kernel state of kube-proxy's data plane: for iptables,
	// the backend that holds kube-proxy's chains.
	Plane   dataplane.Plane
	NodeIPs []netip.Addr
	// LocalAddrs are every address local to the node: NodeIPs, then the
	// other addresses its interfaces hold when the snapshot has them.
	LocalAddrs []netip.Addr
	Expected   *behavior.Table
	Observed   *behavior.Table
	// Flows are the conntrack entries to the node's Service frontends,
	// when the snapshot holds the conntrack table.
	Flows []Flow
	// Findings are behavioural differences plus text-level checks; nil
	// Expected means only text-level checks ran.
	Findings []behavior.Finding
	Notes    []string
	// Unchecked says why the behaviour was not compared with the model
	// (the plane's walk is not complete: dataplane.Unchecked); Findings
	// then hold text-level checks only.
	Unchecked string

	// state, source, inferred and space are what Recheck reuses: the
	// node's captured state, the snapshot's source, the plane's inference,
	// and the probe space (the endpoint addresses no probe may use).
	state    *snapshot.NodeState
	source   string
	inferred dataplane.Inferred
	space    *behavior.ProbeSpace
}

// Options narrow an analysis to what a question needs.
type Options struct {
	// Service, when set, limits the behaviour tables to that Service's
	// frontends, and the kernel's frontends that name no Service (only a
	// walk can attribute them): explain and trace ask about one Service,
	// and the agent rechecks one after a change, on nodes with thousands.
	// Its Port is ignored: every port of the Service is analysed.
	// Text-level checks and conntrack still cover the whole state.
	Service *ServiceRef
	// Lean leaves the rules out of the observed outcomes of frontends
	// without a finding (drift shows rules only with findings): their
	// walks record no hops, and a frontend with a finding is walked again
	// for its rules. It probes hairpin masquerading only where the model
	// calls for it (see dataplane.ObserveInput.HairpinDueOnly). Findings
	// are the same as without.
	Lean bool
	// Model, when it fits the analysis (PrepareModel of the same cluster,
	// node and family, for an analysis not narrowed), is the view used
	// instead of building it. A Model serves one analysis: the analysis
	// completes the view with the node's addresses.
	Model *Model
	// memo is the node's last observation, for a drift check (see Memo).
	memo *dataplane.ObserveMemo
}

// Analyze parses a node's dumps of one family (iptables, nftables), picks
// the data plane kube-proxy programs there, and compares its behaviour with
// the model.
func Analyze(s *snapshot.Snapshot, node, family string) (*NodeAnalysis, error) {
	return AnalyzeWith(s, node, family, Options{})
}

// AnalyzeWith is Analyze narrowed by o.
func AnalyzeWith(s *snapshot.Snapshot, node, family string, o Options) (*NodeAnalysis, error) {
	ns, ok := s.Node(node)
	if !ok {
		return nil, fmt.Errorf("node %q is not in the snapshot; %s", node, suggest.Hint(node, nodeNames(s), "nodes in the snapshot"))
	}
	if err := checkNodeObject(s.Cluster, node); err != nil {
		return nil, err
	}
	a := &NodeAnalysis{Node: node, Family: family, Config: ns.KubeProxy, state: ns, source: s.Metadata.Source}
	a.Release = nodeRelease(s, node)
	topo := topologyOf(a.Release)
	// The model's view needs only the API objects: it is made while the
	// dumps are parsed.
	views := make(chan modelResult, 1)
	if o.Model.fits(s.Cluster, node, family, topo, o) {
		go func() { views <- o.Model.wait() }()
	} else {
		go func() { views <- modelView(s.Cluster, node, family, topo, o, true) }()
	}
	pl, err := loadPlanes(ns, family, o.Service != nil)
	view := <-views
	if err != nil {
		return nil, err
	}
	plane, note, err := pl.choose(node, a.Config.Mode)
	if err != nil {
		return nil, err
	}
	a.Plane = plane
	pl.lendGates(plane)
	if o.Service == nil {
		// Before anything reads the state: what the last check of the
		// node read cleanly need not be read again (see Memo).
		dataplane.PrimeMemo(o.memo, plane)
	}
	if note != "" {
		a.Notes = append(a.Notes, note)
	}
	a.Findings = append(a.Findings, pl.checks(plane, node)...)
	a.Notes = append(a.Notes, pl.inertLeftovers(plane, node)...)
	// The plane's notes are taken after the walks, which may parse more of
	// a narrowly read state, and kept in their place.
	planeNotes := len(a.Notes)
	// The plane finds its frontends (which the walks need, and keeps)
	// while it infers kube-proxy's settings.
	found := make(chan struct{})
	go func() { a.Plane.Frontends(); close(found) }()
	a.inferred = a.Plane.Infer()
	a.inferConfig(a.inferred)
	<-found
	// Text-level checks read the state as the walks do: both at once.
	checks := make(chan []behavior.Finding, 1)
	go func() { checks <- a.Plane.Checks(node, a.Config.Mode) }()
	err = a.behaviour(view, o, nil)
	textFindings := <-checks
	if err == nil {
		err = pl.deferredErr()
	}
	if err != nil {
		return nil, err
	}
	if view.view != nil {
		a.Findings = append(a.Findings, podCIDRChecks(node, family, a.Config, view.cluster, view.view.PodCIDRs)...)
		a.Findings = append(a.Findings, serviceCIDRChecks(node, family, view.cluster, view.view.PodCIDRs)...)
		local := a.state.Addresses
		if a.source == "import" {
			local = nil
		}
		a.Findings = append(a.Findings, nodePortChecks(node, a.Config, a.View, local)...)
	}
	a.Findings = append(a.Findings, syncChecks(node, a.Config.Sync)...)
	a.Notes = slices.Insert(a.Notes, planeNotes, a.Plane.Notes()...)
	a.Notes = uniqueNotes(a.Notes)
	entries, haveCT, err := conntrackEntries(ns, family)
	if err != nil {
		return nil, err
	}
	if haveCT && a.Expected != nil {
		a.Flows = a.CorrelateConntrack(entries)
		a.Findings = append(a.Findings, ConntrackFindings(node, a.Flows)...)
	}
	var causes []behavior.Finding
	if c, ok := a.Plane.(dataplane.Causer); ok {
		causes = c.Causes(node)
	}
	a.Findings, textFindings = causedBy(a.Findings, textFindings, causes)
	nameServices(textFindings, a.Expected)
	a.Findings = foldOrphans(append(a.Findings, textFindings...))
	a.Findings = append(a.Findings, watchChecks(node, a.Config.Sync, view.cluster, a.Findings)...)
	a.Findings = behavior.Merge(a.Findings)
	if e, ok := a.Plane.(dataplane.Excerpter); ok && e.Excerpt() != "" {
		var left string
		a.Findings, left = provenByExcerpt(a.Findings)
		if left != "" {
			a.Notes = append(a.Notes, "an excerpt of the rules cannot prove what it lacks: "+left+" not reported; a whole dump (iptables-save, or collect on the node) can")
		}
	}
	return a, nil
}

// provenByExcerpt keeps the findings an excerpt of the rules proves: what
// it holds that should not be there (a frontend or an endpoint no longer
// in the API, another mode's chain). What it lacks may only be left out of
// it; those findings are dropped, and counted by type.
func provenByExcerpt(fs []behavior.Finding) ([]behavior.Finding, string) {
	dropped := map[string]int{}
	var types []string
	kept := slices.DeleteFunc(fs, func(f behavior.Finding) bool {
		switch f.Type {
		case behavior.StaleFrontend, behavior.StaleEndpoint, behavior.LeftoverRules:
			return false
		}
		if dropped[f.Type] == 0 {
			types = append(types, f.Type)
		}
		dropped[f.Type]++
		return true
	})
	parts := make([]string, 0, len(types))
	for _, t := range types {
		parts = append(parts, wording.Count(dropped[t], t+" finding", t+" findings"))
	}
	return kept, strings.Join(parts, ", ")
}

// uniqueNotes keeps the first of notes that are the same.
func uniqueNotes(notes []string) []string {
	seen := make(map[string]bool, len(notes))
	return slices.DeleteFunc(notes, func(n string) bool {
		if seen[n] {
			return true
		}
		seen[n] = true
		return false
	})
}

// modelResult is the API objects an analysis works on (narrowed to a
// Service when it asks about one) and kube-proxy's view of them.
type modelResult struct {
	cluster *snapshot.Cluster
	view    *model.NodeView
	err     error
}

// modelView builds kube-proxy's view of the node from the API objects c
// (nil: none), narrowed to o.Service; full says the narrowed cluster must
// carry the whole cluster's endpoint addresses and names (see
// snapshot.Cluster.Narrow).
func modelView(c *snapshot.Cluster, node, family string, topo model.Topology, o Options, full bool) modelResult {
	if o.Service != nil {
		c = c.Narrow([]types.NamespacedName{{Namespace: o.Service.Namespace, Name: o.Service.Name}}, full)
	}
	if c == nil {
		return modelResult{}
	}
	v, err := model.BuildNodeViewWith(c, node, family, topo)
	if err != nil {
		return modelResult{err: fmt.Errorf("building kube-proxy's view of node %s: %w", node, err)}
	}
	return modelResult{cluster: c, view: v}
}

// behaviour builds the expected table from the model's view m, observes
// the plane, and adds the differences to the findings. prior, when not
// nil, is the probe space of an earlier analysis of the node, whose taken
// addresses are the cluster's endpoints (Recheck).
func (a *NodeAnalysis) behaviour(m modelResult, o Options, prior *behavior.ProbeSpace) error {
	ns, family, c := a.state, a.Family, m.cluster
	if m.err != nil {
		return m.err
	}
	if m.view != nil {
		a.View = m.view
		a.Notes = append(a.Notes, m.view.Notes...)
	}
	a.Notes = append(a.Notes, releaseNotes(a.Release, m.view, a.Config.Mode)...)
	a.NodeIPs = nodeIPs(a.View, ns, family)
	a.LocalAddrs = localAddrs(a.NodeIPs, ns.Addresses, family)
	cidrs := behavior.ParsePrefixes(a.Config.ClusterCIDRs)
	// One probe space for both sides, so that they stand for each source
	// class with the same address.
	var space behavior.ProbeSpace
	if prior != nil {
		space = prior.With(slices.Collect(maps.Keys(endpointAddrs(a.View))))
	} else {
		space = behavior.NewProbeSpace(cidrs, a.LocalAddrs, endpointAddrs(a.View))
		if a.View != nil {
			space.PodCIDRs = behavior.ParsePrefixes(a.View.PodCIDRs)
		}
		if c != nil && c.Partial != nil {
			// The whole cluster's endpoints, of which the view has
			// only the Service's.
			space.TakenSorted = c.Partial.EndpointAddrs
		}
	}
	a.space = &space
	in := dataplane.ObserveInput{Node: a.Node, Family: family, NodeIPs: a.NodeIPs, ClusterCIDRs: cidrs,
		LocalAddrs: a.LocalAddrs[len(a.NodeIPs):], Probes: space, PodIface: podIface(a.Config)}
	if o.Service != nil {
		ref := ServiceRef{Namespace: o.Service.Namespace, Name: o.Service.Name}
		in.Only = func(f behavior.Frontend) bool { return f.Service == "" || ref.Matches(f.Service) }
	}
	if a.View != nil {
		if len(a.View.NodeIPs) == 0 && len(ns.Addresses) > 0 {
			a.View.NodeIPs = ns.Addresses
		}
		var notes []string
		local := ns.Addresses
		if a.source == "import" {
			// An import's addresses are the Node's (--node-ip, or its
			// Node object), not proof of which the node's interfaces
			// hold: where the kernel lists the addresses it accepts
			// NodePorts on, that list decides, with or without --node-ip.
			local = nil
		}
		a.Expected, notes = Expected(ExpectedInput{View: a.View, Config: a.Config, LocalAddrs: local,
			NodePortIPs: a.inferred.NodePortIPs, NodePortIPsKnown: a.inferred.NodePortIPsKnown,
			Probes: space, Release: a.Release})
		a.Notes = append(a.Notes, notes...)
		in.Expected = a.Expected.Frontends
	}
	in.NoRules, in.HairpinDueOnly = o.Lean, o.Lean
	if o.Service == nil {
		in.Memo = o.memo
	}
	a.Observed = dataplane.Observe(a.Plane, in)
	// What the walks assumed; the plane's own notes among them are
	// dropped below, where the plane's notes are taken.
	a.Notes = append(a.Notes, a.Observed.Notes...)
	a.Notes = append(a.Notes, othersMasquerade(a.Expected, a.Observed)...)
	if u, ok := a.Plane.(dataplane.Unchecked); ok && a.Expected != nil && u.Unchecked() != "" {
		// The plane's notes say why.
		a.Unchecked = u.Unchecked()
		return nil
	}
	if a.Expected != nil {
		fs := Compare(a.Expected, a.Observed)
		if o.Lean && len(fs) > 0 {
			a.observeWithRules(in, fs)
			fs = Compare(a.Expected, a.Observed)
		}
		a.Findings = append(a.Findings, fs...)
		a.otherCopy(in)
	} else {
		a.Notes = append(a.Notes, "no API objects in the snapshot: behaviour is read from the rules alone, and only text-level checks run")
	}
	return nil
}

// observeWithRules walks again, with their rules, the frontends a lean
// observation found differences on, and puts them in a.Observed.
func (a *NodeAnalysis) observeWithRules(in dataplane.ObserveInput, fs []behavior.Finding) {
	keys := map[string]bool{}
	for _, f := range fs {
		for _, k := range f.Frontends {
			keys[k] = true
		}
	}
	in.NoRules, in.HairpinDueOnly, in.Memo = false, false, nil
	in.Expected = nil
	for _, e := range a.Expected.Frontends {
		if keys[e.Key.String()] {
			in.Expected = append(in.Expected, e)
		}
	}
	in.Only = func(f behavior.Frontend) bool { return keys[f.Key.String()] }
	again := dataplane.Observe(a.Plane, in).Index()
	for i, f := range a.Observed.Frontends {
		if g, ok := again[f.Key]; ok {
			a.Observed.Frontends[i] = *g
		}
	}
}

// foldOrphans attaches an orphaned chain to the finding it follows from (a
// Service's dispatch rule or an endpoint's jump was lost, so its chain is
// unreachable), instead of reporting the one fault twice.
func foldOrphans(fs []behavior.Finding) []behavior.Finding {
	cause := map[string]int{}
	for i, f := range fs {
		switch f.Type {
		case behavior.MissingEndpoint:
			cause[f.Service+" "+f.Expected] = i
		case behavior.MissingFrontend:
			cause[f.Service] = i
		case behavior.FirewallMismatch:
			// A lost firewall dispatch leaves the Service's firewall
			// chain unreachable.
			if _, ok := cause[f.Service]; !ok {
				cause[f.Service] = i
			}
		}
	}
	folded := map[int]bool{}
	for i, f := range fs {
		if f.Type != behavior.OrphanChain {
			continue
		}
		j, ok := cause[f.Service]
		if !ok && f.Endpoint != "" {
			j, ok = cause[f.Service+" "+f.Endpoint]
		}
		if ok {
			fs[j].Rules = append(fs[j].Rules, "orphaned: "+f.Observed)
			folded[i] = true
		}
	}
	var out []behavior.Finding
	for i, f := range fs {
		if !folded[i] {
			out = append(out, f)
		}
	}
	return out
}

// podIface is an interface a pod's packets arrive on under a local-traffic
// detector that goes by interface: the bridge, or a name with the prefix;
// "" for the other detectors.
func podIface(cfg snapshot.ProxyConfig) string {
	switch {
	case cfg.DetectLocalMode == "BridgeInterface":
		return cfg.BridgeInterface
	case cfg.DetectLocalMode == "InterfaceNamePrefix" && cfg.InterfaceNamePrefix != "":
		return cfg.InterfaceNamePrefix + "0"
	}
	return ""
}

// inferConfig completes the settings the snapshot did not tell from what
// the kernel state shows (in: the plane's Infer).
func (a *NodeAnalysis) inferConfig(in dataplane.Inferred) {
	if a.Config.Mode == "" && in.Mode != "" {
		a.Config.Mode = in.Mode
		why := "kube-proxy's objects are in " + a.Plane.Mode()
		for _, e := range in.Evidence {
			if strings.HasPrefix(e, "mode "+in.Mode) {
				why = strings.TrimPrefix(e, "mode "+in.Mode+": ")
			}
		}
		a.Config.Inferred = append(a.Config.Inferred, "mode: "+in.Mode+" ("+why+")")
	}
	for _, e := range in.Evidence {
		if a.Config.Mode == "" && strings.HasPrefix(e, "mode ") && strings.Contains(e, "? ") {
			a.Config.Inferred = append(a.Config.Inferred, e)
		}
	}
	detector := a.Config.DetectLocalMode == "" || a.Config.DetectLocalMode == "ClusterCIDR"
	if detector && len(a.Config.ClusterCIDRs) == 0 && len(in.ClusterCIDRs) > 0 {
		a.Config.ClusterCIDRs = in.ClusterCIDRs
		for _, e := range in.Evidence {
			if strings.HasPrefix(e, "cluster CIDR") {
				a.Config.Inferred = append(a.Config.Inferred, e)
			}
		}
	}
	if a.Config.DetectLocalMode == "" && len(a.Config.ClusterCIDRs) == 0 {
		switch {
		case in.LocalBridge != "":
			a.Config.DetectLocalMode, a.Config.BridgeInterface = "BridgeInterface", in.LocalBridge
		case in.LocalIfacePrefix != "":
			a.Config.DetectLocalMode, a.Config.InterfaceNamePrefix = "InterfaceNamePrefix", in.LocalIfacePrefix
		}
		if a.Config.DetectLocalMode != "" {
			for _, e := range in.Evidence {
				if strings.HasPrefix(e, "local traffic") {
					a.Config.Inferred = append(a.Config.Inferred, "local-traffic detector "+a.Config.DetectLocalMode+": "+e)
				}
			}
		}
	}
	if a.Config.MasqueradeBit == nil && in.MasqueradeBit != 0 {
		b := in.MasqueradeBit
		a.Config.MasqueradeBit = &b
		a.Config.Inferred = append(a.Config.Inferred, fmt.Sprintf("masquerade bit: %d (read off the masquerade mark rule)", b))
	}
	if len(a.Config.Inferred) > 0 && a.Config.Source == "" {
		a.Config.Source = "inferred"
	}
}

func nodeIPs(v *model.NodeView, ns *snapshot.NodeState, family string) []netip.Addr {
	var src []string
	if v != nil {
		src = v.NodeIPs
	}
	if len(src) == 0 {
		src = ns.Addresses
	}
	var out []netip.Addr
	for _, s := range src {
		a, err := netip.ParseAddr(s)
		if err != nil || (family == "IPv6") != a.Is6() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// localAddrs is nodeIPs followed by the other addresses of the family the
// node's interfaces hold.
func localAddrs(nodeIPs []netip.Addr, addrs []string, family string) []netip.Addr {
	out := append([]netip.Addr(nil), nodeIPs...)
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil || (family == "IPv6") != a.Is6() || a.IsLoopback() || slices.Contains(out, a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// endpointAddrs are the addresses of every endpoint of the view: no probe
// may stand for a client with one of them. (A view narrowed to some
// Services has only theirs; the whole cluster's are the narrowed
// snapshot's Partial.EndpointAddrs.)
func endpointAddrs(v *model.NodeView) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	if v == nil {
		return out
	}
	for i := range v.Ports {
		for _, e := range v.Ports[i].Endpoints {
			if a, err := netip.ParseAddr(e.IP); err == nil {
				out[a] = true
			}
		}
	}
	return out
}

func nodeNames(s *snapshot.Snapshot) []string {
	var names []string
	for _, n := range s.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// checkNodeObject fails when the API objects list Nodes and none is the
// node analysed: kube-proxy's view of a node that does not exist (a typo in
// --node) would invent findings for every local endpoint.
func checkNodeObject(c *snapshot.Cluster, node string) error {
	if c == nil || len(c.Nodes) == 0 {
		return nil
	}
	var names []string
	for i := range c.Nodes {
		if c.Nodes[i].Name == node {
			return nil
		}
		names = append(names, c.Nodes[i].Name)
	}
	return fmt.Errorf("node %q matches no Node object of the API; %s", node, suggest.Hint(node, names, "Nodes"))
}

// ValidateDumps parses every dump of a snapshot, so that a damaged capture
// is refused when it is imported, with the line of the fault.
func ValidateDumps(s *snapshot.Snapshot) error {
	for i := range s.Nodes {
		for _, fam := range []string{"IPv4", "IPv6"} {
			if _, err := loadPlanes(&s.Nodes[i], fam, false); err != nil {
				return err
			}
		}
		if _, _, err := conntrackEntries(&s.Nodes[i], ""); err != nil {
			return err
		}
	}
	return nil
}
