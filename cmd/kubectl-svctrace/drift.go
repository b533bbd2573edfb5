package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/analysis"
)

type driftOptions struct {
	*commonOptions
	ref *analysis.ServiceRef
}

func newDriftCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &driftOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "drift [[NAMESPACE/]NAME]",
		Short: "Compare what kube-proxy should have programmed with what the kernel holds",
		Long: `Compare, per Service frontend and source class, what kube-proxy should have
programmed on a node (from the API objects) with what the node's rules do,
and list the differences as typed findings (MissingFrontend, StaleFrontend,
MissingEndpoint, StaleEndpoint, WeightMismatch, AffinityMismatch,
FirewallMismatch, MasqueradeMismatch, LocalPolicyMismatch,
NoEndpointsRuleMismatch), ForeignVerdict where another component's rule or
a chain's policy decides a Service's connections before kube-proxy's rules,
plus text-level checks: MissingJumpRule (kube-proxy's jumps from the built-in
chains, a flushed table), OrphanChain, LeftoverRules (userspace proxier,
another proxy mode), BackendSplitBrain (KUBE chains in both iptables-legacy
and iptables-nft), and in ipvs mode MissingVIPAddress and ExtraVIPAddress
(kube-ipvs0), MissingSetMember and StaleSetMember (kube-proxy's ipsets),
Weight0ReadyEndpoint and SchedulerMismatch; and kube-proxy's own state:
PodCIDRMismatch (its cluster CIDR against the node's Pods),
NodePortAddressesMismatch (its nodePortAddresses against the node's
addresses), ServiceCIDROverlap (the node's Pods in the Service range),
BlackHoledTraffic (a share of a frontend's connections that reach no backend) and,
on the node, KubeProxyNotSyncing (its /healthz and sync metrics). A cause is reported
once, with the differences that follow from it folded in. The comparison is
on behaviour, never on rule text, so another kube-proxy release's layout
raises nothing.

Without --snapshot or --local, the nodes are read from a workstation through
the svctrace agent on each (deploy/agent.yaml), whose API checks the caller's
rights with the API server: --node N reads node N's state and checks it here; --all-nodes asks
every node's agent for its own check, which already tells kube-proxy's lag
from drift, many nodes at once (--max-concurrent, --node-timeout). A node
that cannot be read is reported with its error, and the others are checked.

As kubectl does, a cluster's drift is checked in the current namespace (or
-n NAMESPACE), with what belongs to the node itself (leftover rules, chains
no Service owns, kube-proxy's settings); -A checks every namespace. A
snapshot, whose namespaces the kubeconfig does not know, is checked whole
unless -n is given. The report names the namespace it checked.

Exit codes: 0 no drift, 1 drift found, 2 error, 3 no drift found but some
nodes could not be read.`,
		Example: `  kubectl svctrace drift --all-nodes -A
  kubectl svctrace drift --snapshot snapshot.yaml --all-nodes
  kubectl svctrace drift default/nginx --snapshot snapshot.yaml --node node1 -o yaml
  kubectl svctrace drift --local -A --node "$(hostname)"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd, true)
	o.addNodesFlags(cmd, "Check every node: of the snapshot, or of the cluster through their agents")
	return cmd
}

func (o *driftOptions) complete(args []string) error {
	if err := o.commonOptions.complete(); err != nil {
		return err
	}
	if len(args) == 1 {
		ref, err := analysis.ParseServiceRef(args[0], o.namespace)
		if err != nil {
			return err
		}
		o.ref = &ref
	}
	return nil
}

func (o *driftOptions) validate() error {
	return o.commonOptions.validate()
}

func (o *driftOptions) run(cmd *cobra.Command) error {
	if o.allNodes && o.snapshotFile == "" && !o.helper {
		return o.runAllNodes(cmd.Context())
	}
	collectGarbageLess()
	o.prepareModel = true
	s, err := o.snapshot(cmd.Context())
	if err != nil {
		return err
	}
	opts := analysis.DriftOptions{Family: o.family, Scope: o.scope(), Models: o.models}
	if !o.allNodes && len(s.Nodes) > 0 {
		if err := o.pickNode(s); err != nil {
			return err
		}
		opts.Nodes = []string{o.node}
	}
	var r *analysis.DriftReport
	if len(s.Nodes) == 0 && len(o.unread) > 0 {
		// Helper Pods read no node.
		r, err = analysis.DriftOfNodes(s.Cluster, opts, o.unread)
	} else if r, err = analysis.Drift(s, opts); err == nil && len(o.unread) > 0 {
		var rest *analysis.DriftReport
		if rest, err = analysis.DriftOfNodes(s.Cluster, opts, o.unread); err == nil {
			r.Nodes = append(r.Nodes, rest.Nodes...)
		}
	}
	switch {
	case errors.Is(err, analysis.ErrNoNodeState):
		return fmt.Errorf("%s %w", o.source(), err)
	case err != nil && o.snapshotFile != "":
		return fmt.Errorf("snapshot %s: %w", o.snapshotFile, err)
	case err != nil:
		return err
	}
	return o.printDrift(r)
}

// printDrift prints a drift report and gives its exit code: drift found,
// else some node not read, else success.
func (o *driftOptions) printDrift(r *analysis.DriftReport) error {
	if err := o.print(r, func(wide bool) { analysis.RenderDrift(o.Out, r, wide) }); err != nil {
		return err
	}
	switch {
	case len(r.Findings) > 0:
		return &exitCodeError{code: exitDrift}
	case len(r.Unreadable()) > 0:
		return &exitCodeError{code: exitUnreadable}
	}
	return nil
}

// source names where the node state comes from, for messages.
func (o *commonOptions) source() string {
	if o.snapshotFile != "" {
		return "snapshot " + o.snapshotFile
	}
	return "the live state"
}

// scope is what drift checks: the Service asked for, else the namespaces
// of namespaceScope.
func (o *driftOptions) scope() analysis.Scope {
	if o.ref != nil {
		return analysis.Scope{Service: o.ref}
	}
	ns, current := o.namespaceScope()
	return analysis.Scope{Namespace: ns, Current: current}
}
