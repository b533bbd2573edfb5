package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func commandName() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl svctrace"
	}
	return "svctrace"
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	name := commandName()
	root := &cobra.Command{
		Use:   name,
		Short: "Explain what a node's kernel does with packets sent to a Kubernetes Service",
		Long: `svctrace reads a node's kube-proxy rules (iptables), pairs them with the
Services, EndpointSlices, Nodes and Pods of the API, and shows the real path
of a packet to each Service frontend: every hop with the exact kernel rule,
every backend with its effective probability, and where the kernel differs
from what kube-proxy should have programmed.

Node state comes from --snapshot FILE (made by "collect", or attached to a bug
report) or, on the node itself, from --local (the current network namespace).

Exit codes: 0 success (drift: no drift), 1 drift found (drift only),
2 error (bad input, missing Service, unreadable dump).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: name},
	}
	root.AddCommand(newExplainCommand(streams), newTraceCommand(streams), newDriftCommand(streams),
		newCollectCommand(streams), newReconcileCommand(streams), newVersionCommand(streams))
	return root
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the svctrace version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(streams.Out, "svctrace %s\n", version)
			return err
		},
	}
}
