package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/trace"
)

type traceOptions struct {
	*commonOptions
	packet trace.PacketSpec
}

func newTraceCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &traceOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "trace --src IP --dst IP:PORT[/PROTO]",
		Short: "Walk one packet through a node's rules",
		Long: `Walk the first packet of a new connection through the node's rules the way
the kernel does (nat PREROUTING or OUTPUT, filter INPUT, FORWARD or OUTPUT,
nat POSTROUTING), and print every branch it can take with its probability,
the exact rule at each hop (with its line in the dump), the DNAT target and
the Pod behind it, masquerading, affinity, and the reason for a REJECT or
DROP.`,
		Example: `  # A pod on node1 connecting to a ClusterIP
  kubectl svctrace trace --snapshot snapshot.yaml --node node1 --src 10.244.0.9 --dst 10.96.94.233:80

  # The node itself connecting to a NodePort over UDP
  kubectl svctrace trace --local --node node1 --from node --src 192.0.2.10 --dst 192.0.2.10:30053/udp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			pkt, err := trace.ParsePacket(o.packet)
			if err != nil {
				return err
			}
			if err := o.packetFamily(pkt, cmd.Flags().Changed("family")); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVar(&o.packet.Src, "src", "", "Source address of the packet")
	cmd.Flags().StringVar(&o.packet.Dst, "dst", "", "Destination IP:PORT[/tcp|udp|sctp] (default protocol tcp)")
	cmd.Flags().StringVar(&o.packet.From, "from", "pod", "Where the packet enters: pod or external (nat PREROUTING), node (nat OUTPUT)")
	cmd.Flags().StringSliceVar(&o.packet.Sticky, "affinity", nil, "Affinity records that already hold the source (the affinityKey of an earlier trace: a KUBE-SEP-... recent list, an nftables affinity-... set): trace a returning client")
	_ = cmd.MarkFlagRequired("src")
	_ = cmd.MarkFlagRequired("dst")
	return cmd
}

func (o *traceOptions) run(cmd *cobra.Command) error {
	s, a, err := o.analyzeNode(cmd.Context())
	if err != nil {
		return err
	}
	r, err := trace.Trace(a, s.Cluster, o.packet)
	if err != nil {
		return err
	}
	return o.print(r, func(wide bool) { trace.RenderTrace(o.Out, r, wide) })
}

// packetFamily sets the family to read from the packet's addresses: both
// must be of one family, and --family, when given, must agree.
func (o *traceOptions) packetFamily(pkt dataplane.Packet, familyGiven bool) error {
	src, dst := pkt.Src.Unmap(), pkt.Dst.Unmap()
	if src.Is4() != dst.Is4() {
		return fmt.Errorf("--src %s is %s and --dst %s is %s: a packet has one IP family", src, familyOf(src.Is4()), dst, familyOf(dst.Is4()))
	}
	fam := familyOf(dst.Is4())
	if familyGiven && o.family != fam {
		return fmt.Errorf("--family %s, but the packet (--src %s, --dst %s) is %s", o.family, src, dst, fam)
	}
	o.family = fam
	return nil
}

func familyOf(is4 bool) string {
	if is4 {
		return "IPv4"
	}
	return "IPv6"
}
