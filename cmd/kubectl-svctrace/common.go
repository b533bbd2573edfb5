package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// commonOptions are the flags every node-reading command shares.
type commonOptions struct {
	genericiooptions.IOStreams
	configFlags   *genericclioptions.ConfigFlags
	allNamespaces bool
	output        string
	snapshotFile  string
	local         bool
	node          string
	family        string
	clusterCIDR   []string
	// kubeProxyVersion (--kube-proxy-version) is the version every node's
	// kube-proxy is taken to run.
	kubeProxyVersion string
	proxyMetrics     string
	objectsFile      string

	namespace string
	// only narrows the load and the analysis to one Service (explain):
	// a binary snapshot is read in part, and only its frontends are walked.
	only *analysis.ServiceRef
	// prepareModel (drift) has a live read build the node's model view
	// while the kernel's rules are still being dumped, into models.
	prepareModel bool
	models       []*analysis.Model
	// allNodes reads every node (of the snapshot, or of the cluster from
	// a workstation), concurrency at once, each within nodeTimeout;
	// unread are the nodes that could not be read.
	allNodes    bool
	concurrency int
	nodeTimeout time.Duration
	unread      []analysis.NodeFindings
	// helper reads a node through a short-lived helper Pod instead of
	// its agent.
	helper          bool
	helperImage     string
	helperNamespace string
	// flags are the command's flags, which tell whether it is an apply
	// (--apply); configzChecked is set once kube-proxy's /configz has been
	// cross-checked, so that only the read before a write can refuse it.
	flags          *pflag.FlagSet
	configzChecked bool
}

func newCommonOptions(streams genericiooptions.IOStreams) *commonOptions {
	return &commonOptions{IOStreams: streams, configFlags: genericclioptions.NewConfigFlags(true), output: "text", family: "IPv4"}
}

func (o *commonOptions) addFlags(cmd *cobra.Command, withNode bool) {
	o.flags = cmd.Flags()
	o.configFlags.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Look at Services in every namespace")
	cmd.Flags().StringVarP(&o.output, "output", "o", o.output, "Output format: text, wide, json or yaml")
	cmd.Flags().StringVar(&o.snapshotFile, "snapshot", "", "Read everything from this Snapshot file instead of the cluster")
	cmd.Flags().BoolVar(&o.local, "local", false, "Read the kernel state of the network namespace svctrace runs in (run it on the node)")
	cmd.Flags().StringVar(&o.family, "family", o.family, "IP family to read: IPv4 or IPv6")
	cmd.Flags().StringSliceVar(&o.clusterCIDR, "cluster-cidr", nil, "kube-proxy's --cluster-cidr, when it can be read neither from the cluster nor from the rules")
	cmd.Flags().StringVar(&o.kubeProxyVersion, "kube-proxy-version", "", "kube-proxy's version on the node (default: what its /metrics, its Pod's image or a k3s or RKE2 node tells): the release whose behaviour and layout svctrace follows")
	cmd.Flags().StringVar(&o.objectsFile, "objects", "", "API objects from this file (a v1 List or YAML stream of Nodes, Services, EndpointSlices, Pods) instead of the cluster")
	cmd.Flags().StringVar(&o.proxyMetrics, "kube-proxy-metrics-address", inspect.DefaultKubeProxyMetricsAddress, "With --local: where the node's kube-proxy serves /configz")
	cmd.Flags().BoolVar(&o.helper, "helper-pod", false, "From a workstation, where no agent runs: read the node through a short-lived Pod on it (host network, NET_ADMIN and NET_RAW), deleted after")
	cmd.Flags().StringVar(&o.helperImage, "helper-image", "", "The svctrace image of --helper-pod (default: the agent DaemonSet's, else svctrace.local/svctrace:VERSION)")
	cmd.Flags().StringVar(&o.helperNamespace, "helper-namespace", "default", "The namespace of --helper-pod's Pod")
	if withNode {
		cmd.Flags().StringVar(&o.node, "node", "", "Node to look at (default: the only node in the snapshot)")
	}
	setupKubectlFlags(cmd)
}

func (o *commonOptions) complete() error {
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	o.namespace = ns
	if o.configFlags.Namespace != nil && *o.configFlags.Namespace != "" {
		o.namespace = *o.configFlags.Namespace
	}
	return nil
}

// namespaceScope is the namespace a command looks at when it looks at
// many Services, as kubectl does: the one given with -n, else the
// kubeconfig's current one (current is then true); "" for every namespace
// with -A, and for a snapshot without -n, whose namespaces the kubeconfig
// does not know.
func (o *commonOptions) namespaceScope() (ns string, current bool) {
	asked := o.configFlags.Namespace != nil && *o.configFlags.Namespace != ""
	if o.allNamespaces || (o.snapshotFile != "" && !asked) {
		return "", false
	}
	return o.namespace, !asked
}

func (o *commonOptions) validate() error {
	switch o.output {
	case "text", "wide", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: want text, wide, json or yaml", o.output)
	}
	if o.family != "IPv4" && o.family != "IPv6" {
		return fmt.Errorf("--family %q: want IPv4 or IPv6", o.family)
	}
	if _, ok := proxyrelease.Minor(o.kubeProxyVersion); o.kubeProxyVersion != "" && !ok {
		return fmt.Errorf("--kube-proxy-version %q: want a kube-proxy version like v1.32.13", o.kubeProxyVersion)
	}
	if o.snapshotFile != "" && o.local {
		return fmt.Errorf("--snapshot and --local exclude each other")
	}
	if o.allNodes && o.local {
		return errors.New("--all-nodes reads every node, through their agents or from a snapshot: --local reads only the node it runs on")
	}
	if o.local && o.node == "" {
		return fmt.Errorf("--local needs --node NAME: the node this network namespace is")
	}
	if o.helper && (o.local || o.snapshotFile != "") {
		return fmt.Errorf("--helper-pod reads a node from a workstation: it excludes --local and --snapshot")
	}
	if o.allNodes {
		switch {
		case o.node != "":
			return errors.New("--all-nodes and --node exclude each other")
		case o.concurrency < 1:
			return fmt.Errorf("--max-concurrent %d: want 1 or more", o.concurrency)
		case o.nodeTimeout <= 0:
			return fmt.Errorf("--node-timeout %v: want a positive duration", o.nodeTimeout)
		}
		return nil
	}
	return o.remoteNeedsNode()
}

// addNodesFlags adds --all-nodes (saying what it does) and how a
// workstation reads many nodes.
func (o *commonOptions) addNodesFlags(cmd *cobra.Command, allNodes string) {
	cmd.Flags().BoolVar(&o.allNodes, "all-nodes", false, allNodes)
	cmd.Flags().IntVar(&o.concurrency, "max-concurrent", 16, "With --all-nodes from a workstation: nodes read at once")
	cmd.Flags().DurationVar(&o.nodeTimeout, "node-timeout", time.Minute, "From a workstation: how long one node may take (with --node or --all-nodes)")
}

// clusterNodeNames are the nodes of the cluster, sorted.
func clusterNodeNames(c *snapshot.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// remoteNeedsNode is the error of a command that reads a node through its
// agent without being told which.
func (o *commonOptions) remoteNeedsNode() error {
	if o.snapshotFile == "" && !o.local && o.node == "" {
		return fmt.Errorf("no node given: --node NAME reads that node through its svctrace agent (or give --snapshot FILE, or run on the node with --local)")
	}
	return nil
}

// remote reads nodes through Pods on them, with the kubeconfig's access.
func (o *commonOptions) remote() (inspect.Remote, error) {
	cfg, err := restConfig(o.configFlags)
	if err != nil {
		return inspect.Remote{}, err
	}
	cs, err := newClientset(o.configFlags)
	if err != nil {
		return inspect.Remote{}, err
	}
	return inspect.Remote{Config: cfg, Client: cs}, nil
}

// snapshot returns the snapshot to work on: from the file, or live (API
// objects from the kubeconfig, kernel state of this network namespace).
func (o *commonOptions) snapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	var s *snapshot.Snapshot
	if o.snapshotFile != "" {
		var err error
		if o.only != nil {
			s, err = snapshot.LoadPartial(o.snapshotFile, []types.NamespacedName{{Namespace: o.only.Namespace, Name: o.only.Name}})
		} else {
			s, err = snapshot.Load(o.snapshotFile)
		}
		if err != nil {
			return nil, err
		}
	} else {
		var err error
		if s, err = o.liveSnapshot(ctx); err != nil {
			return nil, err
		}
	}
	if len(o.clusterCIDR) > 0 {
		for i := range s.Nodes {
			s.Nodes[i].KubeProxy.ClusterCIDRs = o.clusterCIDR
			s.Nodes[i].KubeProxy.Source = "flags"
		}
	}
	if o.kubeProxyVersion != "" {
		for i := range s.Nodes {
			s.Nodes[i].KubeProxy.Version = o.kubeProxyVersion
		}
	}
	return s, nil
}

// analyzeNode loads the snapshot and analyses the node the command is
// about.
func (o *commonOptions) analyzeNode(ctx context.Context) (*snapshot.Snapshot, *analysis.NodeAnalysis, error) {
	s, err := o.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := o.pickNode(s); err != nil {
		return nil, nil, err
	}
	a, err := o.analyze(s, o.node)
	if err != nil {
		return nil, nil, err
	}
	return s, a, nil
}

// analyze analyses one node of the snapshot; an error (a damaged dump)
// names the snapshot file it came from.
func (o *commonOptions) analyze(s *snapshot.Snapshot, node string) (*analysis.NodeAnalysis, error) {
	a, err := analysis.AnalyzeWith(s, node, o.family, analysis.Options{Service: o.only})
	if err != nil && o.snapshotFile != "" {
		return nil, fmt.Errorf("snapshot %s: %w", o.snapshotFile, err)
	}
	return a, err
}

// pickNode defaults --node to the snapshot's only node.
func (o *commonOptions) pickNode(s *snapshot.Snapshot) error {
	if o.node != "" {
		return nil
	}
	if len(s.Nodes) != 1 {
		var names []string
		for _, n := range s.Nodes {
			names = append(names, n.Name)
		}
		return fmt.Errorf("the snapshot holds %d nodes %v: choose one with --node", len(s.Nodes), names)
	}
	o.node = s.Nodes[0].Name
	return nil
}

func (o *commonOptions) liveSnapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Metadata: snapshot.Metadata{CreationTimestamp: time.Now().UTC(), Source: "live", Generator: "svctrace " + version}}
	// The kernel's rules and kube-proxy's /configz are read while the API
	// objects are listed; from a workstation, the node's state is read
	// through its agent after.
	var rules func() inspect.Rules
	var pc snapshot.ProxyConfig
	var cs kubernetes.Interface
	var configz func() (snapshot.ProxyConfig, error)
	if o.local {
		rules = inspect.ReadRules(ctx)
		configz = inspect.StartProxyConfigFromConfigz(ctx, o.proxyMetrics)
	}
	if o.objectsFile != "" {
		c, notes, err := decodeObjectsFile(o.objectsFile)
		if err != nil {
			return nil, err
		}
		s.Cluster = c
		s.Metadata.Notes = append(s.Metadata.Notes, notes...)
		if o.local {
			// No API, no ConfigMap to fall back on: the settings are
			// inferred where /configz does not answer.
			pc, _, _, _ = inspect.ProxySettings(ctx, nil, configz)
		}
	} else {
		var err error
		if cs, err = o.clientset(); err != nil {
			return nil, err
		}
		// kube-proxy programs every Service of the cluster, so the model
		// needs them all whatever namespace the command looks at.
		c, notes, err := inspect.CollectAPI(ctx, cs, "")
		if err != nil {
			return nil, err
		}
		s.Cluster = c
		s.Metadata.Notes = append(s.Metadata.Notes, notes...)
		if o.local {
			// /configz is served without authentication, so what it says
			// is cross-checked with kube-proxy's Pod and ConfigMap.
			var fromConfigz bool
			var note string
			if pc, fromConfigz, note, err = inspect.ProxySettings(ctx, cs, configz); err != nil {
				return nil, err
			}
			if fromConfigz {
				if err := o.crossCheckConfigz(ctx, cs, pc, s); err != nil {
					return nil, err
				}
			}
			if note != "" {
				s.Metadata.Notes = append(s.Metadata.Notes, note)
			}
		}
	}
	if o.prepareModel && o.node != "" && s.Cluster != nil {
		o.models = append(o.models, analysis.PrepareModel(s.Cluster, o.node, o.family, pc.Version))
	}
	// The conntrack table is read only for the Services' addresses and
	// the node's own (NodePorts), so a full table stays out of memory.
	if !o.local {
		return o.remoteNodeState(ctx, s)
	}
	node, lnotes, err := inspect.CollectLocal(ctx, o.node, inspect.LocalOptions{ConntrackDst: inspect.ServiceAddrs(s.Cluster), Rules: rules})
	if err != nil {
		return nil, err
	}
	s.Metadata.Notes = append(s.Metadata.Notes, lnotes...)
	node.KubeProxy = pc
	if ps, err := inspect.ReadProxySync(ctx, o.proxyMetrics, o.family); err == nil {
		node.KubeProxy.Sync = ps
	}
	s.Nodes = append(s.Nodes, node)
	if v, _ := analysis.ProxyVersion(s, o.node); v == "" && cs != nil {
		// kube-proxy is down and its Pod gone: its DaemonSet still names
		// the release it runs.
		if plan, err := inspect.KubeProxyPlanOf(ctx, cs, s.Cluster, o.node); err == nil && plan.Version != "" {
			s.Nodes[len(s.Nodes)-1].KubeProxy.Version = plan.Version
			s.Metadata.Notes = append(s.Metadata.Notes, plan.VersionNote())
		}
	}
	return s, nil
}

// applying tells whether the command writes to the kernel (--apply).
func (o *commonOptions) applying() bool {
	if o.flags == nil {
		return false
	}
	apply, err := o.flags.GetBool("apply")
	return err == nil && apply
}

// crossCheckConfigz compares kube-proxy's settings read from /configz,
// which has no authentication, with its Pod's flags or ConfigMap: what
// could not be confirmed, or disagrees, is noted in the snapshot, and a
// disagreement refuses an apply before anything is written.
func (o *commonOptions) crossCheckConfigz(ctx context.Context, cs kubernetes.Interface, pc snapshot.ProxyConfig, s *snapshot.Snapshot) error {
	refuse := o.applying() && !o.configzChecked
	o.configzChecked = true
	c, err := inspect.CheckConfigz(ctx, cs, o.node, pc)
	if err != nil {
		if refuse {
			return &exitCodeError{code: exitError, err: fmt.Errorf("refusing to repair: kube-proxy's settings read from /configz at %s (a port without authentication) could not be cross-checked: %w", o.proxyMetrics, err)}
		}
		c = inspect.ConfigzCheck{Verdict: inspect.ConfigzUnchecked, Reason: err.Error()}
	}
	notes, err := configzOutcome(c, o.proxyMetrics, len(o.clusterCIDR) > 0, refuse)
	s.Metadata.Notes = append(s.Metadata.Notes, notes...)
	// A repair's report does not show the snapshot's notes: they are
	// warned of.
	if o.flags != nil && o.flags.Lookup("apply") != nil && err == nil {
		for _, n := range notes {
			fmt.Fprintln(o.ErrOut, "warning:", wording.PrintableText(n))
		}
	}
	return err
}

// configzOutcome turns a cross-check into notes, or with refuse into the
// error that stops an apply. ownCIDRs (--cluster-cidr given) leaves the
// cluster CIDRs out: svctrace uses the flag's.
func configzOutcome(c inspect.ConfigzCheck, addr string, ownCIDRs, refuse bool) ([]string, error) {
	notes := slices.Clone(c.Notes)
	if c.Verdict == inspect.ConfigzUnchecked {
		return append(notes, fmt.Sprintf("kube-proxy's settings come from its /configz at %s, which any process on the host network can serve while kube-proxy is down, and could not be confirmed: %s", addr, c.Reason)), nil
	}
	var disputes []string
	source := ""
	for _, d := range c.Disputes {
		if ownCIDRs && d.Setting == "clusterCIDRs" {
			continue
		}
		line := fmt.Sprintf("%s: %q in /configz, %q in the cluster", d.Setting, d.Configz, d.Declared)
		if d.Default {
			line += " (kube-proxy's default: not set there)"
		}
		disputes, source = append(disputes, line), d.Source
	}
	if len(disputes) == 0 {
		return notes, nil
	}
	port := addr
	if _, p, err := net.SplitHostPort(addr); err == nil {
		port = p
	}
	check := fmt.Sprintf("check that the process bound to %s is kube-proxy (ss -ltnp 'sport = :%s'); if it is, its configuration changed since it started: wait for it to restart", addr, port)
	if refuse {
		return notes, &exitCodeError{code: exitError, err: fmt.Errorf("refusing to repair: kube-proxy's settings read from /configz at %s, a port without authentication, disagree with %s, so rules rendered from them could be wrong:\n  %s\n%s, then run the repair again",
			addr, source, strings.Join(disputes, "\n  "), check)}
	}
	return append(notes, fmt.Sprintf("kube-proxy's /configz at %s, a port without authentication, disagrees with %s: %s. svctrace used the values of /configz, and a repair (--apply) would refuse: %s",
		addr, source, strings.Join(disputes, "; "), check)), nil
}

// remoteNodeState reads the node's kernel state (every node's, with
// --all-nodes) through its agent's Pod, or a helper Pod, into s. A node
// that cannot be read fails the command, or with --all-nodes is kept in
// o.unread while the others are read.
func (o *commonOptions) remoteNodeState(ctx context.Context, s *snapshot.Snapshot) (*snapshot.Snapshot, error) {
	r, err := o.remote()
	if err != nil {
		return nil, err
	}
	nodes := []string{o.node}
	// One node is bounded as each of many is: a node that does not
	// answer is the same error either way.
	fan := inspect.FanOut{Concurrency: 1, Timeout: o.nodeTimeout}
	if o.allNodes {
		if nodes = clusterNodeNames(s.Cluster); len(nodes) == 0 {
			return nil, errors.New("the cluster lists no nodes")
		}
		fan = inspect.FanOut{Concurrency: o.concurrency, Timeout: o.nodeTimeout, Progress: progressOn(o.ErrOut)}
	}
	var helper *inspect.Helper
	if o.helper {
		helper = &inspect.Helper{Namespace: o.helperNamespace, Image: o.helperImageOr(ctx, r), Deadline: 10 * time.Minute, Ready: 2 * time.Minute}
	}
	for _, nr := range r.ReadNodes(ctx, nodes, helper, inspect.ServiceAddrs(s.Cluster), fan) {
		if nr.Err != nil {
			if !o.allNodes {
				return nil, nr.Err
			}
			o.unread = append(o.unread, analysis.NodeFindings{Node: nr.Node, Err: nr.Err})
			continue
		}
		for _, n := range nr.Notes {
			if n != "" {
				s.Metadata.Notes = append(s.Metadata.Notes, fmt.Sprintf("node %s: %s", nr.Node, n))
			}
		}
		s.Nodes = append(s.Nodes, nr.State)
	}
	return s, nil
}

func (o *commonOptions) clientset() (kubernetes.Interface, error) {
	return newClientset(o.configFlags)
}

func decodeObjectsFile(path string) (*snapshot.Cluster, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading objects: %w", err)
	}
	c, notes, err := model.DecodeObjects(data)
	if err != nil {
		return nil, nil, fmt.Errorf("objects file %s: %w", path, err)
	}
	return c, notes, nil
}

// print writes a report object: json and yaml through cli-runtime's
// printers, text and wide through the given renderer, which writes to
// o.Out. Its text holds strings of the kernel and the API objects (rule
// comments, names): it is written out only once every control character
// in it is escaped (wording.PrintableText), so that none reaches the
// terminal.
func (o *commonOptions) print(obj runtime.Object, text func(wide bool)) error {
	switch o.output {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(obj, o.Out)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(obj, o.Out)
	}
	out := o.Out
	var b strings.Builder
	o.Out = &b
	defer func() { o.Out = out }()
	text(o.output == "wide")
	_, err := io.WriteString(out, wording.PrintableText(b.String()))
	return err
}

// helperImageOr is --helper-image, else the agent DaemonSet's image (the
// same binary and tools), else the image hack/image.sh names by default.
func (o *commonOptions) helperImageOr(ctx context.Context, r inspect.Remote) string {
	if o.helperImage != "" {
		return o.helperImage
	}
	if img := r.AgentImage(ctx); img != "" {
		return img
	}
	return "svctrace.local/svctrace:" + versionString()
}
