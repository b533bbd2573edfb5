package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/trace"
)

type explainOptions struct {
	*commonOptions
	ref analysis.ServiceRef
}

func newExplainCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &explainOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "explain [NAMESPACE/]NAME[:PORT]",
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

  # On the node itself, against the live API
  kubectl svctrace explain shop/cart:http --node node1 --local -o wide`,
		Args: cobra.ExactArgs(1),
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
	return cmd
}

func (o *explainOptions) complete(args []string) error {
	if err := o.commonOptions.complete(); err != nil {
		return err
	}
	ref, err := analysis.ParseServiceRef(args[0], o.namespace)
	if err != nil {
		return err
	}
	o.ref = ref
	o.only = &o.ref
	return nil
}

func (o *explainOptions) run(cmd *cobra.Command) error {
	collectGarbageLate(oneServiceHeapLimit)
	s, a, err := o.analyzeNode(cmd.Context())
	if err != nil {
		return err
	}
	r, err := trace.Explain(a, s.Cluster, o.ref)
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, s.Metadata.Notes...)
	return o.print(r, func(wide bool) { trace.RenderExplain(o.Out, r, wide) })
}
