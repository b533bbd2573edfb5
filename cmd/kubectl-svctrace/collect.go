package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

type collectOptions struct {
	*commonOptions
	outFile string
	// files are the dumps to import, by collector, each kind's flag
	// declared by its plane (plugins.Dumps).
	files      map[string]*[]string
	table      string
	excerpt    bool
	backend    string
	mode       string
	addresses  []string
	appendNode bool
}

func newCollectCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &collectOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "collect --node N -f FILE",
		Short: "Write a Snapshot: live, or imported from captured files",
		Long: `Write a Snapshot file that every other command reads with --snapshot, for
offline work or to attach to a bug report.

Live (on the node): the API objects from the kubeconfig plus the kernel state
of this network namespace (--local). Import: --objects (the output of
"kubectl get nodes,services,endpointslices,pods -A -o yaml") and the dumps
captured on the node (--iptables-save, from iptables-save or iptables -S).
Without --objects a bare dump is imported: Services are then named from rule
comments and chain hashes.`,
		Example: `  # Import captured files
  kubectl svctrace collect --node node1 --objects objects.yaml --iptables-save node1.iptables-save.txt -f snap.yaml

  # A node in nftables mode
  kubectl svctrace collect --node node2 --objects objects.yaml --nft-json node2.nft.json -f snap.yaml
  # (the text form, nft list ruleset, is read too)
  kubectl svctrace collect --node node2 --objects objects.yaml --nft-json node2.nft.txt -f snap.yaml

  # A bare dump pasted from a ticket (iptables -S lines, table inferred)
  kubectl svctrace collect --node node1 --iptables-save rules.txt -f snap.yaml

  # Live, on the node
  kubectl svctrace collect --local --node "$(hostname)" -f snap.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd, true)
	o.addNodesFlags(cmd, "From a workstation: every node of the cluster, through their agents, into one snapshot")
	cmd.Flags().StringVarP(&o.outFile, "filename", "f", "", "Write the snapshot here: binary (.snap; loads fastest, and in part for one Service) unless the name ends in .yaml or .json; - for YAML on stdout")
	o.files = map[string]*[]string{}
	for _, k := range plugins.Dumps() {
		o.files[k.Collector] = new([]string)
		cmd.Flags().StringSliceVar(o.files[k.Collector], k.Flag, nil, k.Help)
	}
	cmd.Flags().StringVar(&o.table, "table", "", "Import: the table of a dump without *table headers (default: inferred from chain names)")
	cmd.Flags().BoolVar(&o.excerpt, "excerpt", false, "Import: the dumps are excerpts cut by hand, so a table may end without its COMMIT (read as far as it goes instead of refused as truncated)")
	cmd.Flags().StringVar(&o.backend, "backend", "", "Import: the iptables backend of the dumps, "+strings.Join(plugins.Backends(), " or ")+" (default: what the iptables-save header says; unknown when it says neither)")
	cmd.Flags().StringVar(&o.mode, "proxy-mode", "", "Import: kube-proxy's mode, if known")
	cmd.Flags().StringSliceVar(&o.addresses, "node-ip", nil, "Import: the node's addresses, when --objects has no Node object for it")
	cmd.Flags().BoolVar(&o.appendNode, "append", false, "Add the node to the snapshot already in -f FILE (replacing a node of the same name), to collect several nodes into one")
	return cmd
}

// importing: rule dumps are given to import (a conntrack table alone is
// none: it goes with the rules of its node).
func (o *collectOptions) importing() bool {
	for _, k := range plugins.Dumps() {
		if len(k.Tools) > 0 && len(*o.files[k.Collector]) > 0 {
			return true
		}
	}
	return false
}

// importFiles are the files to import, by collector.
func (o *collectOptions) importFiles() map[string][]string {
	out := map[string][]string{}
	for c, f := range o.files {
		if len(*f) > 0 {
			out[c] = *f
		}
	}
	return out
}

func (o *collectOptions) validate() error {
	if o.outFile == "" {
		return fmt.Errorf("-f FILE is required (use - for stdout)")
	}
	if o.appendNode && o.outFile == "-" {
		return fmt.Errorf("--append needs a snapshot file, not stdout")
	}
	if o.node == "" && !o.allNodes {
		return fmt.Errorf("--node is required (or --all-nodes, through the nodes' agents)")
	}
	if o.allNodes && (o.importing() || o.appendNode) {
		return fmt.Errorf("--all-nodes reads every node through its agent: it excludes importing dumps and --append")
	}
	if o.importing() {
		if o.local || o.snapshotFile != "" {
			return fmt.Errorf("importing dumps (--iptables-save, --nft-json) excludes --local and --snapshot")
		}
		return nil
	}
	if o.snapshotFile != "" {
		return fmt.Errorf("collect reads a node (--local, or through its agent) or imports dumps: --snapshot is for the other commands")
	}
	return o.commonOptions.validate()
}

func (o *collectOptions) run(cmd *cobra.Command) error {
	var s *snapshot.Snapshot
	if o.importing() {
		var c *snapshot.Cluster
		var notes []string
		if o.objectsFile != "" {
			var err error
			if c, notes, err = decodeObjectsFile(o.objectsFile); err != nil {
				return err
			}
		}
		pc := snapshot.ProxyConfig{Mode: o.mode, ClusterCIDRs: o.clusterCIDR}
		if o.mode != "" || len(o.clusterCIDR) > 0 {
			pc.Source = "flags"
		}
		var err error
		s, err = inspect.Import(inspect.ImportOptions{
			Node: o.node, Cluster: c, Files: o.importFiles(),
			Table: o.table, Excerpt: o.excerpt, Backend: o.backend, KubeProxy: pc, Addresses: o.addresses, Now: time.Now(), Generator: "svctrace " + version,
		})
		if err != nil {
			return err
		}
		s.Metadata.Notes = append(s.Metadata.Notes, notes...)
	} else {
		var err error
		if s, err = o.snapshot(cmd.Context()); err != nil {
			return err
		}
	}
	if o.allNodes && len(s.Nodes) == 0 {
		return fmt.Errorf("no node could be read: %v", o.unread[0].Err)
	}
	if err := analysis.ValidateDumps(s); err != nil {
		return err
	}
	if err := analysis.IndexDumps(s); err != nil {
		return err
	}
	if o.appendNode {
		prev, err := snapshot.Load(o.outFile)
		if err != nil {
			return fmt.Errorf("--append: %w", err)
		}
		s = snapshot.Merge(prev, s)
	}
	if o.outFile == "-" {
		data, err := snapshot.Encode(s, "")
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	}
	if err := snapshot.Save(s, o.outFile); err != nil {
		return err
	}
	if o.allNodes {
		fmt.Fprintf(o.ErrOut, "wrote snapshot of %s to %s\n", wording.Count(len(s.Nodes), "node", "nodes"), o.outFile)
		for _, n := range o.unread {
			fmt.Fprintf(o.ErrOut, "node %s: not read: %v\n", n.Node, n.Err)
		}
		if len(o.unread) > 0 {
			return &exitCodeError{code: exitUnreadable}
		}
		return nil
	}
	fmt.Fprintf(o.ErrOut, "wrote snapshot of node %s to %s\n", o.node, o.outFile)
	return nil
}
