package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/trace"
)

type explainOptions struct {
	*commonOptions
	ref analysis.ServiceRef
	// all: no Service was named; every frontend of the node is explained.
	all bool
}

func newExplainCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &explainOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "explain [[NAMESPACE/]NAME[:PORT]]",
		Short: "Show the path of every frontend of a Service on a node",
		Long: `Show, for every frontend of a Service (ClusterIP, NodePort, external IPs,
LoadBalancer IPs), what the node's kernel does with a new connection from a
pod, from the node itself and from outside: each backend with its effective
probability and the exact rules on its path, masquerading, session
affinity, source ranges, and why a connection is rejected or dropped. The
API objects add the causes the rules cannot show: a selector that matches
no Pods, a named targetPort some Pods lack, no ready endpoints, no local
endpoint under a Local traffic policy, Pods older than the Service.`,
		Example: `  # From a snapshot file (no cluster needed)
  kubectl svctrace explain default/nginx --snapshot snapshot.yaml

  # Every frontend of a node, as from a bare IPVS table (no Service named)
  kubectl svctrace explain --snapshot ipvs.yaml

  # On the node itself, against the live API
  kubectl svctrace explain shop/cart:http --node node1 --local -o wide`,
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
	o.addNodesFlags(cmd, "Explain the Service on every node: of the snapshot, or of the cluster through their agents")
	return cmd
}

func (o *explainOptions) complete(args []string) error {
	if err := o.commonOptions.complete(); err != nil {
		return err
	}
	if len(args) == 0 {
		// Every frontend: the whole node is analysed.
		o.all = true
		return nil
	}
	ref, err := analysis.ParseServiceRef(args[0], o.namespace)
	if err != nil {
		return err
	}
	o.ref = ref
	o.only = &o.ref
	return nil
}

// explain is the report of the Service asked about, or of every frontend.
func (o *explainOptions) explain(a *analysis.NodeAnalysis, c *snapshot.Cluster) (*trace.ExplainReport, error) {
	if o.all {
		return trace.ExplainAll(a, c), nil
	}
	return trace.Explain(a, c, o.ref)
}

func (o *explainOptions) run(cmd *cobra.Command) error {
	if o.allNodes {
		return o.runAllNodes(cmd)
	}
	collectGarbageLate(oneServiceHeapLimit)
	s, a, err := o.analyzeNode(cmd.Context())
	if err != nil {
		return err
	}
	r, err := o.explain(a, s.Cluster)
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, s.Metadata.Notes...)
	return o.print(r, func(wide bool) { trace.RenderExplain(o.Out, r, wide) })
}

// runAllNodes explains the Service on every node read, one report per
// node (a List with -o json or yaml); a node that could not be read is
// said so, and the exit code is then 3.
func (o *explainOptions) runAllNodes(cmd *cobra.Command) error {
	s, err := o.snapshot(cmd.Context())
	if err != nil {
		return err
	}
	var reports []runtime.Object
	for i, n := range s.Nodes {
		a, err := o.analyze(s, n.Name)
		if err != nil {
			return err
		}
		r, err := o.explain(a, s.Cluster)
		if err != nil {
			return err
		}
		// Each report takes its node's notes, the first the general ones.
		for _, note := range s.Metadata.Notes {
			if strings.HasPrefix(note, "node "+n.Name+": ") || (i == 0 && !strings.HasPrefix(note, "node ")) {
				r.Notes = append(r.Notes, note)
			}
		}
		reports = append(reports, r)
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
	for _, r := range reports {
		list.Items = append(list.Items, runtime.RawExtension{Object: r})
	}
	err = o.print(list, func(wide bool) {
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(o.Out)
			}
			trace.RenderExplain(o.Out, r.(*trace.ExplainReport), wide)
		}
		for _, n := range o.unread {
			fmt.Fprintf(o.Out, "\nnode %s: not read: %v\n", n.Node, n.Err)
		}
	})
	if err != nil {
		return err
	}
	if len(o.unread) > 0 {
		return &exitCodeError{code: exitUnreadable}
	}
	return nil
}
