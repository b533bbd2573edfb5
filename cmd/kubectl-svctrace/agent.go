package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/exporter"
	"github.com/svctrace/svctrace/nodeapi"
	"github.com/svctrace/svctrace/reconcile"
)

// defaultAgentAddress is where the agent serves its metrics and health.
const defaultAgentAddress = ":9859"

// defaultAPIAddress is where the agent serves its authenticated API.
var defaultAPIAddress = fmt.Sprintf(":%d", nodeapi.DefaultPort)

type agentOptions struct {
	genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	opts        agent.Options
	listen      string
	apiAddress  string
	socket      string
	exporter    exporter.Options
}

func newAgentCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &agentOptions{IOStreams: streams, configFlags: genericclioptions.NewConfigFlags(true),
		opts: agent.DefaultOptions(os.Getenv("NODE_NAME")), listen: defaultAgentAddress, apiAddress: defaultAPIAddress, socket: agent.DefaultSocket}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: check this node for drift continuously and export it to Prometheus",
		Long: `The node agent runs on each node (a DaemonSet with host networking): it
watches the Services, EndpointSlices and its own Node as kube-proxy does, reads
the kernel's state of the node, and checks it for drift when the objects
change (once they have been quiet for --debounce) and every --interval.
At a period when nothing was found, no object changed and the digest of the
kernel's state (the nf_tables generation, the legacy tables' entries without
their counters) is the one taken before the last read, the period confirms the
last check rather than reading the node again; the node is read in full at
least every --full-interval, and every period while an IPVS table is in use.

A difference counts as drift only once it outlives kube-proxy's next sync after
the change that could explain it (kube-proxy's metrics tell when it synced), or
once it has lasted --grace-period where those metrics cannot be read. Until
then it is a pending finding. A kube-proxy that has not synced for
--stall-after while changes wait is reported as stalled.

It serves /metrics (svctrace_* metrics of the last check; a scrape never reads
the kernel), /livez, /readyz (the objects listed and a check done) and a
landing page at /. Its full report (findings with their rules and client
addresses), the node's state and the repairs are served on its API
(--api-address, TLS): it authenticates each caller (a client certificate of
the cluster's client CA, or a bearer token it has the API server review) and
asks the API server whether they may "get" (read) or "update" (repair) the
virtual resource nodes/svctrace of this node. It publishes its certificate's
SHA-256 on its Pod ($POD_NAMESPACE/$POD_NAME), which the CLI pins. The report
is also served on a Unix socket in its Pod (--socket) for "agent report".`,
		Example: `  # On a node, as root, with the node's name
  kubectl-svctrace agent --node "$(hostname)" --kubeconfig /etc/kubernetes/kubelet.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return &exitCodeError{code: exitError, err: err}
			}
			return o.run(cmd.Context())
		},
	}
	o.configFlags.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.opts.Node, "node", o.opts.Node, "The node the agent runs on (default: $NODE_NAME)")
	f.StringVar(&o.listen, "listen-address", o.listen, "Where to serve /metrics, /livez and /readyz")
	f.StringVar(&o.opts.Family, "family", o.opts.Family, "IP family to check: IPv4 or IPv6")
	f.DurationVar(&o.opts.Interval, "interval", o.opts.Interval, "Check the node this often (up to twice as long after a confirmation that would cost more than 0.5% of a core at this period)")
	f.DurationVar(&o.opts.Debounce, "debounce", o.opts.Debounce, "After an API change, check once the objects have been quiet this long")
	f.DurationVar(&o.opts.KernelDebounce, "kernel-debounce", o.opts.KernelDebounce, "After the kernel's rules change, check once they have been quiet this long")
	f.BoolVar(&o.opts.WatchKernel, "watch-kernel", o.opts.WatchKernel, "Check the node soon after its kernel's rules change (nf_tables notifications; the legacy tables' sizes, asked four times a second), not only after API changes and each --interval")
	f.DurationVar(&o.opts.FullInterval, "full-interval", o.opts.FullInterval, "Read the node in full at least this often: a period when nothing was found and nothing changed (the kernel's digest, the objects, kube-proxy's syncs) confirms the last check. --interval or less: read it in full every period")
	f.DurationVar(&o.opts.MinGap, "min-gap", o.opts.MinGap, "Least time between the starts of two checks (never less than twice the last check's time)")
	f.DurationVar(&o.opts.CheckTimeout, "check-timeout", o.opts.CheckTimeout, "Cancel a check that has not ended after this long (a failed check); /livez fails once no check has ended for 3 intervals and this")
	f.DurationVar(&o.opts.Grace, "grace-period", o.opts.Grace, "A difference that lasts this long is drift whatever kube-proxy's metrics say")
	f.DurationVar(&o.opts.StallAfter, "stall-after", o.opts.StallAfter, "Report kube-proxy as stalled when changes have waited this long for a sync")
	f.StringVar(&o.opts.KubeProxyMetrics, "kube-proxy-metrics-address", o.opts.KubeProxyMetrics, "Where the node's kube-proxy serves /metrics and /configz")
	f.StringVar(&o.apiAddress, "api-address", o.apiAddress, "Where to serve the authenticated node API, TLS (\"\": none)")
	f.StringVar(&o.socket, "socket", o.socket, "Unix socket to serve the full report on (\"\": none)")
	f.BoolVar(&o.exporter.EndpointLabels, "endpoint-labels", false, "Also export findings per endpoint (svctrace_endpoint_drift_findings): one series per endpoint with findings")
	cmd.AddCommand(newAgentReportCommand(streams))
	return cmd
}

// newAgentReportCommand prints the report of the agent running beside it
// (in its Pod): what the CLI reads from each node for drift --all-nodes.
func newAgentReportCommand(streams genericiooptions.IOStreams) *cobra.Command {
	socket := agent.DefaultSocket
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Print the report of the agent running beside this command (JSON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agent.ReadReport(cmd.Context(), socket, streams.Out)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", socket, "The agent's Unix socket")
	return cmd
}

func (o *agentOptions) validate() error {
	if o.opts.Node == "" {
		return errors.New("--node is needed (or $NODE_NAME, as the DaemonSet sets it from spec.nodeName)")
	}
	if o.opts.Family != "IPv4" && o.opts.Family != "IPv6" {
		return fmt.Errorf("--family %q: want IPv4 or IPv6", o.opts.Family)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--interval", o.opts.Interval}, {"--check-timeout", o.opts.CheckTimeout}, {"--debounce", o.opts.Debounce}, {"--kernel-debounce", o.opts.KernelDebounce}, {"--grace-period", o.opts.Grace}, {"--stall-after", o.opts.StallAfter}, {"--full-interval", o.opts.FullInterval}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %v: want a positive duration", d.name, d.v)
		}
	}
	if o.opts.MinGap < 0 {
		return fmt.Errorf("--min-gap %v: want a duration of 0 or more", o.opts.MinGap)
	}
	return nil
}

func (o *agentOptions) run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(o.ErrOut, nil))
	o.opts.Log = log
	cs, err := newClientset(o.configFlags)
	if err != nil {
		return err
	}
	a, err := agent.New(cs, o.opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen-address: %w", err)
	}
	srv := &http.Server{Handler: exporter.Handler(a.Status, versionString(), o.exporter), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving", "address", ln.Addr().String(), "node", o.opts.Node)
	apiErr := make(chan error, 1)
	if o.apiAddress != "" {
		addr, err := nodeapi.Start(ctx, cs, nodeapi.Options{Node: o.opts.Node, Address: o.apiAddress,
			PodNamespace: os.Getenv("POD_NAMESPACE"), PodName: os.Getenv("POD_NAME"), BackupDir: reconcile.DefaultBackupDir,
			Report: func() ([]byte, error) { return json.Marshal(agent.ReportOf(a.Status())) }, Log: log}, apiErr)
		if err != nil {
			_ = srv.Close()
			return err
		}
		log.Info("serving the node API", "address", addr.String())
	}
	if o.socket != "" {
		go func() {
			if err := agent.ServeSocket(ctx, o.socket, a.Status); err != nil {
				log.Error("serving the report socket", "err", err)
			}
		}()
	}
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	select {
	case err = <-served:
		stop()
		<-ran
		return fmt.Errorf("serving metrics: %w", err)
	case err = <-apiErr:
		stop()
		<-ran
		_ = srv.Close()
		return err
	case err = <-ran:
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	return err
}
