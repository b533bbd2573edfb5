package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/snapshot"
)

// newNodeStateCommand is what the CLI runs in a Pod on a node (the agent's,
// or a helper Pod) to read the node's state from a workstation: the kernel
// state --local reads, written as a binary snapshot to standard output.
func newNodeStateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var node, metrics string
	var dstStdin bool
	slots := agent.DefaultReadSlots()
	cmd := &cobra.Command{
		Use:    "node-state",
		Hidden: true,
		Short:  "Write this node's kernel state to standard output as a binary snapshot (run by the CLI in a Pod on the node)",
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node == "" {
				return &exitCodeError{code: exitError, err: fmt.Errorf("--node is needed")}
			}
			var dst []netip.Addr
			if dstStdin {
				sc := bufio.NewScanner(streams.In)
				for n := 1; sc.Scan(); n++ {
					line := strings.TrimSpace(sc.Text())
					if line == "" {
						continue
					}
					a, err := netip.ParseAddr(line)
					if err != nil {
						return &exitCodeError{code: exitError, err: fmt.Errorf("standard input, line %d: %w", n, err)}
					}
					dst = append(dst, a)
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("reading the addresses on standard input: %w", err)
				}
			}
			ctx := cmd.Context()
			release, err := takeReadSlot(ctx, slots)
			if err != nil {
				return &exitCodeError{code: exitError, err: err}
			}
			defer release()
			s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
				Metadata: snapshot.Metadata{CreationTimestamp: time.Now().UTC(), Source: "live", Generator: "svctrace " + versionString()}}
			ns, notes, err := inspect.CollectLocal(ctx, node, inspect.LocalOptions{ConntrackDst: dst})
			if err != nil {
				return err
			}
			s.Metadata.Notes = notes
			if pc, err := inspect.ProxyConfigFromConfigz(ctx, metrics); err == nil {
				ns.KubeProxy = pc
			} else {
				s.Metadata.Notes = append(s.Metadata.Notes, err.Error())
			}
			if ps, err := inspect.ReadProxySync(ctx, metrics, "IPv4"); err == nil {
				ns.KubeProxy.Sync = ps
			}
			s.Nodes = []snapshot.NodeState{ns}
			data, err := snapshot.Encode(s, "state"+snapshot.BinaryExt)
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "The node this is")
	cmd.Flags().StringVar(&metrics, "kube-proxy-metrics-address", inspect.DefaultKubeProxyMetricsAddress, "Where the node's kube-proxy serves /configz")
	cmd.Flags().BoolVar(&dstStdin, "conntrack-dst-stdin", false, "Keep only the conntrack entries to the addresses on standard input, one per line")
	cmd.Flags().StringVar(&slots.Dir, "slots-dir", slots.Dir, "Where the reads take their slots (\"\" or a missing directory: no bound)")
	cmd.Flags().IntVar(&slots.N, "slots", slots.N, "How many reads may run at once")
	cmd.Flags().DurationVar(&slots.Wait, "slot-wait", slots.Wait, "How long a read waits for a slot before it gives up")
	return cmd
}

// takeReadSlot bounds the reads running at once in the agent's container,
// each holding a node's state under its memory limit. Only the agent's
// container has the slots' directory: elsewhere (a helper Pod) there is
// no bound.
func takeReadSlot(ctx context.Context, slots agent.Slots) (func(), error) {
	if slots.Dir == "" {
		return func() {}, nil
	}
	if _, err := os.Stat(slots.Dir); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	return slots.Take(ctx)
}
