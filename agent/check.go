package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/settle"
	"github.com/svctrace/svctrace/snapshot"
)

// checkOnce reads kube-proxy's state and the kernel's, checks them against
// the objects held, and sorts the findings into drift and pending.
func (a *Agent) checkOnce(ctx context.Context) *Check {
	start := time.Now()
	c := &Check{At: start}
	// kube-proxy's metrics first: the kernel, read after, holds at least
	// what the sync they report wrote.
	kp := a.readKubeProxy(ctx, c)
	a.probeAPI(ctx, c)
	// The digest of the state the read finds (taken before it, or by the
	// planes from what they read): while it stays the same it vouches for
	// what the read found (confirm).
	read := a.reader.Read(ctx)
	rules := func() inspect.Rules {
		r := read()
		c.Fingerprint = r.Fingerprint
		return r
	}
	cl, err := a.w.Cluster()
	if err != nil {
		rules()
		c.Err = errCheck("reading the objects held", err)
		return a.finish(c)
	}
	// Read after the objects were copied: a change between the two is
	// taken as newer than it is, which can only hold a finding back.
	changes := a.w.Changes()
	pc, note := a.proxyConfig(ctx)
	if note != "" {
		c.Notes = append(c.Notes, note)
	}
	if pc.Version == "" {
		pc.Version = kp.Sync.Version
	}
	if !kp.Readable {
		a.kubeProxyPlan(ctx, c, cl, &pc)
	}
	model := analysis.PrepareModel(cl, a.opts.Node, a.opts.Family, pc.Version)
	ns, notes, err := inspect.CollectLocal(ctx, a.opts.Node, inspect.LocalOptions{ConntrackDst: inspect.ServiceAddrs(cl), Rules: rules,
		OnRead: func(r inspect.Read) { c.Reads = append(c.Reads, r) }})
	c.Notes = append(c.Notes, notes...)
	if err != nil {
		c.Err = errCheck("reading the kernel's state", err)
		return a.finish(c)
	}
	ns.KubeProxy = pc
	if kp.Readable {
		ns.KubeProxy.Sync = inspect.NewProxySync(kp.Sync, kp.ReadAt, inspect.ReadKubeProxyHealthz(ctx, a.opts.KubeProxyMetrics))
	}
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Metadata: snapshot.Metadata{CreationTimestamp: start.UTC(), Source: "live"}, Cluster: cl, Nodes: []snapshot.NodeState{ns}}
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: a.opts.Family, Models: []*analysis.Model{model}, Digest: true, Memo: a.memo})
	if err != nil {
		c.Err = errCheck("checking for drift", err)
		return a.finish(c)
	}
	c.Walked.Reused, c.Walked.Walked = a.memo.Counts(a.opts.Node, a.opts.Family)
	c.Notes = append(c.Notes, r.Notes...)
	for _, n := range r.Nodes {
		c.Frontends += n.Frontends
		c.KubeProxy.Mode, c.KubeProxy.Backend = n.Mode, n.Backend
		c.Behaviour, c.ServiceFrontends = n.Behaviour, n.ServiceFrontends
	}
	c.KubeProxy.Version = pc.Version
	sr := a.rules()
	seen := make(map[string]time.Time, len(r.Findings))
	for _, f := range r.Findings {
		k := findingKey(f)
		first, ok := a.firstSeen[k]
		if !ok {
			first = start
		}
		seen[k] = first
		// kube-proxy's own health check has already waited for it.
		if f.Type == behavior.KubeProxyNotSyncing || sr.Settled(kp, changes.Of(serviceOf(f)), first, start) {
			c.Drift = append(c.Drift, f)
		} else {
			c.Pending = append(c.Pending, f)
		}
	}
	a.firstSeen = seen
	return a.finish(c)
}

func (a *Agent) finish(c *Check) *Check {
	c.Duration = time.Since(c.At)
	return c
}

func (a *Agent) rules() settle.Rules {
	return settle.Rules{Grace: a.opts.Grace, Quiet: a.opts.Quiet, StallAfter: a.opts.StallAfter, Skew: a.opts.Skew}
}

// readKubeProxy reads kube-proxy's sync metrics into c and the tracker.
func (a *Agent) readKubeProxy(ctx context.Context, c *Check) settle.KubeProxy {
	start := time.Now()
	s, err := inspect.ReadKubeProxySync(ctx, a.opts.KubeProxyMetrics, a.opts.Family)
	c.KubeProxy.MetricsDuration = time.Since(start)
	if err != nil {
		c.KubeProxy.MetricsErr = err
		return settle.KubeProxy{}
	}
	a.tracker.Observe(s, start)
	kp := settle.KubeProxy{Readable: true, Sync: s, Started: a.tracker.Started, ReadAt: start}
	c.KubeProxy.LastSync = s.LastSync
	c.KubeProxy.Lag, c.KubeProxy.Stalled = a.rules().Lag(kp, start)
	c.KubeProxy.Waiting = kp.Waiting()
	return kp
}

// proxyConfig is kube-proxy's configuration as inspect.ProxySettings
// takes it, with a note saying where it came from when not /configz.
func (a *Agent) proxyConfig(ctx context.Context) (snapshot.ProxyConfig, string) {
	configz := func() (snapshot.ProxyConfig, error) {
		return inspect.ProxyConfigFromConfigz(ctx, a.opts.KubeProxyMetrics)
	}
	pc, _, note, _ := inspect.ProxySettings(ctx, a.cs, configz)
	return pc, note
}

// probeAPI asks the API server for its version: while it cannot be
// reached, the watches keep their objects and the checks go on with them,
// saying so.
func (a *Agent) probeAPI(ctx context.Context, c *Check) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := a.cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err == nil {
		a.apiDownSince = time.Time{}
		return
	}
	if a.apiDownSince.IsZero() {
		a.apiDownSince = c.At
	}
	c.APIErr, c.APIDownSince = err, a.apiDownSince
	c.Notes = append(c.Notes, fmt.Sprintf("the API server cannot be reached since %s (%v): the node is checked against the objects last listed",
		a.apiDownSince.UTC().Format(time.RFC3339), err))
}

// kubeProxyPlan asks kube-proxy's DaemonSet, when kube-proxy does not
// answer, whether it should run on the node (it is then absent, the first
// thing to alert on), and takes its version from the DaemonSet's image
// when nothing else tells it.
func (a *Agent) kubeProxyPlan(ctx context.Context, c *Check, cl *snapshot.Cluster, pc *snapshot.ProxyConfig) {
	plan, err := inspect.KubeProxyPlanOf(ctx, a.cs, cl, a.opts.Node)
	if err != nil {
		c.Notes = append(c.Notes, "kube-proxy does not answer, and whether its DaemonSet runs it on this node is not known: "+err.Error())
		return
	}
	c.KubeProxy.DaemonSet = plan.DaemonSet
	c.KubeProxy.Absent = plan.Expected
	if plan.Expected {
		c.Notes = append(c.Notes, fmt.Sprintf("kube-proxy does not answer on this node (%v), where DaemonSet %s runs it", c.KubeProxy.MetricsErr, plan.DaemonSet))
	}
	if pc.Version == "" && plan.Version != "" {
		pc.Version = plan.Version
		c.Notes = append(c.Notes, plan.VersionNote())
	}
}
