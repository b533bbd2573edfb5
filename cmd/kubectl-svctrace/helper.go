package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/inspect"
)

// newHelperWaitCommand is what a helper Pod runs: nothing, until the CLI
// has read the node through it and deletes it (or the time is up).
func newHelperWaitCommand() *cobra.Command {
	wait := 10 * time.Minute
	cmd := &cobra.Command{
		Use:    "helper-wait",
		Hidden: true,
		Short:  "Wait, as a helper Pod's process, until stopped or the time is up",
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			select {
			case <-sig:
			case <-time.After(wait):
			case <-cmd.Context().Done():
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "for", wait, "How long to wait at most")
	return cmd
}

// newCleanupCommand deletes the helper Pods a CLI could not delete (a
// killed run); each also ends by itself at its deadline.
func newCleanupCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cf := genericclioptions.NewConfigFlags(true)
	all := false
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete the helper Pods that --helper-pod left behind",
		Long: `Delete the helper Pods (label app.kubernetes.io/component=helper) that a
--helper-pod run could not delete, in the namespace given with -n (default:
the kubeconfig's), or in every namespace with -A.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns := ""
			if !all {
				n, _, err := cf.ToRawKubeConfigLoader().Namespace()
				if err != nil {
					return err
				}
				ns = n
			}
			cfg, err := restConfig(cf)
			if err != nil {
				return err
			}
			cs, err := newClientset(cf)
			if err != nil {
				return err
			}
			deleted, err := inspect.Remote{Config: cfg, Client: cs}.CleanupHelpers(cmd.Context(), ns)
			for _, p := range deleted {
				fmt.Fprintf(streams.Out, "deleted helper Pod %s\n", p)
			}
			if err == nil && len(deleted) == 0 {
				fmt.Fprintln(streams.Out, "no helper Pods left")
			}
			return err
		},
	}
	cf.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Look in every namespace")
	setupKubectlFlags(cmd)
	return cmd
}
