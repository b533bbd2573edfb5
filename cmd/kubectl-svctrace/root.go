package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// versionString is the version svctrace reports: the one set at build
// time, else the module version "go install ...@vX.Y.Z" recorded.
func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// commandNames returns the root command's name, which completion scripts
// are generated for and so must be the executable's own, and the name its
// help shows: run as a kubectl plugin, "kubectl-svctrace" shown as
// "kubectl svctrace". Naming the root "kubectl svctrace" would make cobra
// name the completion functions after "kubectl" and replace kubectl's.
func commandNames() (name, display string) {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl-svctrace", "kubectl svctrace"
	}
	return "svctrace", "svctrace"
}

const rootLong = `svctrace reads a node's kube-proxy rules, pairs them with the Services,
EndpointSlices, Nodes and Pods of the API, and shows the real path of a packet
to each Service frontend: every hop with the exact kernel rule, every backend
with its effective probability, and where the kernel differs from what
kube-proxy should have programmed.

Data planes read (kube-proxy 1.30 to 1.37, each release as it behaves):
  iptables   kube-proxy's iptables mode, on either iptables backend:
             nf_tables (iptables-nft) and legacy (iptables-legacy)
  nftables   kube-proxy's nftables mode (kube-proxy 1.31 to 1.37)
  ipvs       kube-proxy's ipvs mode: the IPVS table, with the iptables rules,
             ipsets and kube-ipvs0 addresses that mode keeps
  conntrack  the node's connection tracking table: which live connections go
             to which backend, and which still go to a backend that is gone

Node state comes from --snapshot FILE (made by "collect", or attached to a bug
report; no cluster needed); on the node itself, from --local (the current
network namespace); or, from a workstation, through the svctrace agent on the
node (deploy/agent.yaml), whose API checks the caller's rights with the API
server, with --node N or --all-nodes. The API objects come from the
kubeconfig or --objects FILE.

Exit codes:
  0  success; for drift: no drift found
  1  drift found (drift), stale conntrack entries listed by a
     "reconcile conntrack" dry run (or left after --apply), or changes listed
     by a "reconcile rules" dry run (or findings left after --apply)
  2  error: bad input (a flag, a Service reference, an unreadable or damaged
     dump or snapshot), or a Service, port, namespace or node that is not
     there
  3  --all-nodes from a workstation: no drift found on the nodes read (drift),
     or the nodes read were explained or collected, but some nodes could
     not be read (each is listed with its error)`

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root, _ := newRootCommandProfiled(streams)
	return root
}

// newRootCommandProfiled is the root command and the profiler of its
// --profile flag, which the caller stops once the command has run.
func newRootCommandProfiled(streams genericiooptions.IOStreams) (*cobra.Command, *profiler) {
	name, display := commandNames()
	root := &cobra.Command{
		Use:           name,
		Short:         "Explain what a node's kernel does with packets sent to a Kubernetes Service",
		Long:          rootLong,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: display},
	}
	// Help, --version and __complete write through the command's streams.
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetVersionTemplate("svctrace {{.Version}}\n")

	explain := newExplainCommand(streams)
	explain.ValidArgsFunction = completeServiceArg(true)
	drift := newDriftCommand(streams)
	drift.ValidArgsFunction = completeServiceArg(false)
	root.AddCommand(explain, newTraceCommand(streams), drift, newCollectCommand(streams),
		newReconcileCommand(streams), newTUICommand(streams), newAgentCommand(streams), newNodeStateCommand(streams), newHelperWaitCommand(), newCleanupCommand(streams), newVersionCommand(streams), newCompletionCommand(streams))
	prof := &profiler{}
	prof.addFlags(root)
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return prof.start() }
	return root, prof
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the svctrace version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(streams.Out, "svctrace %s\n", cmd.Root().Version)
			return err
		},
	}
}
