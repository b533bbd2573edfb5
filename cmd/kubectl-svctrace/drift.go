package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/trace"
)

type driftOptions struct {
	*commonOptions
	allNodes bool
	ref      *trace.ServiceRef
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
NoEndpointsRuleMismatch), plus text-level checks: OrphanChain, LeftoverRules
(userspace proxier, IPVS mode) and BackendSplitBrain (KUBE chains in both
iptables-legacy and iptables-nft). The comparison is on behaviour, never on
rule text, so another kube-proxy release's layout raises nothing.

Exit codes: 0 no drift, 1 drift found, 2 error.`,
		Example: `  kubectl svctrace drift --snapshot snapshot.yaml --all-nodes
  kubectl svctrace drift default/nginx --snapshot snapshot.yaml --node node1 -o yaml
  kubectl svctrace drift --local --node "$(hostname)"`,
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
	cmd.Flags().BoolVar(&o.allNodes, "all-nodes", false, "Check every node in the snapshot")
	return cmd
}

func (o *driftOptions) complete(args []string) error {
	if err := o.commonOptions.complete(); err != nil {
		return err
	}
	if len(args) == 1 {
		ref, err := trace.ParseServiceRef(args[0], o.namespace)
		if err != nil {
			return err
		}
		o.ref = &ref
	}
	return nil
}

func (o *driftOptions) validate() error {
	if o.allNodes && o.node != "" {
		return errors.New("--all-nodes and --node exclude each other")
	}
	if o.allNodes && o.local {
		return errors.New("--all-nodes needs a snapshot: --local reads one node")
	}
	return o.commonOptions.validate()
}

func (o *driftOptions) run(cmd *cobra.Command) error {
	s, err := o.snapshot(cmd.Context())
	if err != nil {
		return err
	}
	if len(s.Nodes) == 0 {
		return fmt.Errorf("%s holds no node state: nothing to check (collect one with collect --node N)", o.source())
	}
	if err := o.resolveScope(s); err != nil {
		return err
	}
	var nodes []string
	if o.allNodes {
		for _, n := range s.Nodes {
			nodes = append(nodes, n.Name)
		}
	} else {
		if err := o.pickNode(s); err != nil {
			return err
		}
		nodes = []string{o.node}
	}
	r := analysis.NewDriftReport()
	r.Notes = append(r.Notes, s.Metadata.Notes...)
	for _, n := range nodes {
		a, err := o.analyze(s, n)
		if err != nil {
			return err
		}
		if o.ref != nil && a.Expected == nil {
			if err := o.ref.CheckNamedInRules(a.Observed); err != nil {
				return fmt.Errorf("node %s: %w", n, err)
			}
		}
		var fs []behavior.Finding
		for _, f := range a.Findings {
			if o.wanted(f.Service) {
				fs = append(fs, f)
			}
		}
		r.Findings = append(r.Findings, fs...)
		r.Nodes = append(r.Nodes, analysis.NodeSummary{Name: n, Mode: a.Config.Mode, Frontends: o.frontendsInScope(a),
			Findings: len(fs), Inferred: a.Config.Inferred})
		for _, note := range a.Notes {
			r.Notes = append(r.Notes, fmt.Sprintf("node %s: %s", n, note))
		}
		if a.Expected == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("node %s: no API objects, only text-level checks ran", n))
		}
	}
	if err := o.print(r, func(wide bool) { analysis.RenderDrift(o.Out, r, wide) }); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		return &exitCodeError{code: exitDrift}
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

// resolveScope checks the Service or namespace the command is scoped to
// against the API objects: a typo is an error with the close matches,
// never "no drift".
func (o *driftOptions) resolveScope(s *snapshot.Snapshot) error {
	if o.ref != nil {
		ref, err := o.ref.Resolve(s.Cluster)
		if err != nil {
			return err
		}
		o.ref = &ref
		return nil
	}
	if ns := o.scopeNamespace(); ns != "" {
		return trace.CheckNamespace(s.Cluster, ns)
	}
	return nil
}

// scopeNamespace is the namespace given with -n, unless -A widens the
// scope to every namespace.
func (o *driftOptions) scopeNamespace() string {
	if o.allNamespaces || o.configFlags.Namespace == nil {
		return ""
	}
	return *o.configFlags.Namespace
}

// wanted scopes findings by their Service port name: to the Service named,
// else to the namespace given with -n; without either (or with -A) the
// whole node is checked, as kube-proxy programs every Service of the
// cluster on it.
func (o *driftOptions) wanted(spn string) bool {
	if o.ref != nil {
		return o.ref.Matches(spn)
	}
	if ns := o.scopeNamespace(); ns != "" {
		return spn != "" && strings.HasPrefix(spn, ns+"/")
	}
	return true
}

// frontendsInScope counts the frontends checked (the expected ones and the
// ones the rules list) that are in scope.
func (o *driftOptions) frontendsInScope(a *analysis.NodeAnalysis) int {
	n := 0
	for _, f := range a.Observed.Frontends {
		if o.wanted(f.Service) {
			n++
		}
	}
	return n
}
