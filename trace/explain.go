package trace

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// Explain builds the report for one Service on the analysed node.
// The reference is checked against the API objects first (a typo is an
// error with the close matches; a port may be given by number).
func Explain(a *analysis.NodeAnalysis, c *snapshot.Cluster, ref analysis.ServiceRef) (*ExplainReport, error) {
	ref, err := ref.Resolve(c)
	if err != nil {
		return nil, err
	}
	r := &ExplainReport{TypeMeta: NewTypeMeta("ExplainReport"), Service: ref.String(), Node: a.Node, Mode: a.Config.Mode}
	var svc *corev1.Service
	if c != nil {
		for i := range c.Services {
			s := &c.Services[i]
			if s.Namespace == ref.Namespace && s.Name == ref.Name {
				svc = s
			}
		}
		if svc == nil {
			return nil, fmt.Errorf("service %s/%s not found in the API objects", ref.Namespace, ref.Name)
		}
		if a.View != nil {
			if why, ok := a.View.SkipReason(ref.Namespace, ref.Name); ok {
				r.Skipped = why
			}
		}
		r.Causes = model.Diagnose(c, svc, a.View, plugins.TraitsOf(a.Config.Mode))
	}
	spns := candidateSPNs(ref, a)
	for _, f := range a.Observed.Frontends {
		if !belongs(f, ref, spns, a) {
			continue
		}
		r.Frontends = append(r.Frontends, f)
	}
	if len(r.Frontends) == 0 && r.Skipped == "" {
		if c == nil {
			return nil, fmt.Errorf("no rule on node %s names service %s (by comment or chain hash)", a.Node, ref)
		}
		r.Notes = append(r.Notes, "no frontend of this Service is handled by the node's rules")
	}
	for _, f := range a.Findings {
		if ref.Matches(f.Service) {
			r.Findings = append(r.Findings, f)
		}
	}
	r.Conntrack = flowCounts(a, ref.Matches)
	r.Pods = podsOf(c, a.View)
	r.Notes = append(r.Notes, notesNotAbout(a.Notes, c)...)
	r.Notes = append(r.Notes, a.Config.Inferred...)
	return r, nil
}

// ExplainAll builds the report of every frontend the analysed node's
// rules handle, each named by its Service where the objects or the rules
// tell: for a dump without API objects whose rules name no Service (an
// IPVS table), or to see a whole node.
func ExplainAll(a *analysis.NodeAnalysis, c *snapshot.Cluster) *ExplainReport {
	r := &ExplainReport{TypeMeta: NewTypeMeta("ExplainReport"), Node: a.Node, Mode: a.Config.Mode}
	r.Frontends = append(r.Frontends, a.Observed.Frontends...)
	r.Findings = append(r.Findings, a.Findings...)
	r.Conntrack = flowCounts(a, func(string) bool { return true })
	r.Pods = podsOf(c, a.View)
	r.Notes = append(r.Notes, a.Notes...)
	r.Notes = append(r.Notes, a.Config.Inferred...)
	return r
}

// belongs decides whether a frontend is the Service's: by the model's
// expected frontends, by kube-proxy's comments, or, for rules that name no
// Service, by the plane's own naming of the Service's objects.
func belongs(f behavior.Frontend, ref analysis.ServiceRef, spns []string, a *analysis.NodeAnalysis) bool {
	if a.Expected != nil {
		if e, ok := a.Expected.Find(f.Key); ok {
			return ref.Matches(e.Service) && portMatches(f, ref, a)
		}
	}
	if f.Service != "" {
		return ref.Matches(f.Service)
	}
	for _, o := range f.Outcomes {
		for _, b := range o.Backends {
			for _, rule := range b.Rules {
				if a.Plane.OwnsRule(rule, spns) {
					return true
				}
			}
		}
	}
	return false
}

func portMatches(f behavior.Frontend, ref analysis.ServiceRef, a *analysis.NodeAnalysis) bool {
	if ref.Port == "" {
		return true
	}
	e, _ := a.Expected.Find(f.Key)
	return strings.HasSuffix(e.Service, ":"+ref.Port) || fmt.Sprint(f.Key.Port) == ref.Port
}

// candidateSPNs are the Service port names the Service's objects may be
// named after: its ports' from the model when known, else from the name
// alone (an unnamed port, in the new and the old form, and the port asked
// for).
func candidateSPNs(ref analysis.ServiceRef, a *analysis.NodeAnalysis) []string {
	var out []string
	if a.View != nil {
		for _, p := range a.View.Find(ref.Namespace, ref.Name) {
			out = append(out, p.SPN())
		}
	}
	base := ref.Namespace + "/" + ref.Name
	out = append(out, base, base+":")
	if ref.Port != "" {
		out = append(out, base+":"+ref.Port)
	}
	return out
}

// podsOf maps endpoints to the Pods behind them.
func podsOf(c *snapshot.Cluster, v *model.NodeView) map[string]string {
	out := map[string]string{}
	if v == nil {
		return out
	}
	byIP := map[string]string{}
	if c != nil {
		for _, p := range c.Pods {
			for _, ip := range p.Status.PodIPs {
				byIP[ip.IP] = p.Namespace + "/" + p.Name
			}
			if p.Status.PodIP != "" {
				byIP[p.Status.PodIP] = p.Namespace + "/" + p.Name
			}
		}
	}
	for _, sp := range v.Ports {
		for _, e := range sp.Endpoints {
			switch {
			case e.TargetRef != nil && e.TargetRef.Kind == "Pod":
				ns := e.TargetRef.Namespace
				if ns == "" {
					ns = sp.Namespace
				}
				out[e.String()] = ns + "/" + e.TargetRef.Name
			case byIP[e.IP] != "":
				out[e.String()] = byIP[e.IP]
			}
		}
	}
	return out
}

// flowCounts sums up the conntrack entries of the Service ports match
// takes, per frontend and backend.
func flowCounts(a *analysis.NodeAnalysis, match func(spn string) bool) []FlowCount {
	idx := map[string]int{}
	var out []FlowCount
	for _, f := range a.Flows {
		if !match(f.Service) {
			continue
		}
		backend := f.Backend
		if backend == "" {
			backend = "(untranslated)"
		}
		k := f.Frontend.String() + " " + backend
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, FlowCount{Frontend: f.Frontend.String(), Backend: backend, Counts: map[string]int{}})
		}
		out[i].Counts[f.Status]++
	}
	return out
}

// notesNotAbout drops the analysis notes that are about one Service ("ns/name:
// …", such as an Endpoints object disagreeing with its EndpointSlices):
// explain shows its own Service's as causes, and the others' are not its
// business.
func notesNotAbout(notes []string, c *snapshot.Cluster) []string {
	if c == nil {
		return notes
	}
	svcs := map[string]bool{}
	for i := range c.Services {
		svcs[c.Services[i].Namespace+"/"+c.Services[i].Name] = true
	}
	var out []string
	for _, n := range notes {
		if key, _, ok := strings.Cut(n, ": "); ok && svcs[key] {
			continue
		}
		out = append(out, n)
	}
	return out
}
