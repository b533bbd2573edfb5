package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/svctrace/svctrace/survey"
	"github.com/svctrace/svctrace/tui"
)

type tuiOptions struct {
	*commonOptions
	refresh time.Duration
	logFile string
	noColor bool
	// live follows a live cluster: the watch of its objects and the last
	// state read.
	live *survey.Live
}

func newTUICommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &tuiOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Browse Services, their paths on every node, findings and connections interactively",
		Long: `Open an interactive terminal UI over the same reports explain, trace and
drift print: the Services with the nodes where they drift, one Service on
every node, its paths on one node down to the exact kernel rules, every
finding, the conntrack entries, and a packet trace. Press ? for the keys.

From a workstation it reads every node through its svctrace agent (or
--node N for one), re-reads them every --refresh and on r; with --local it
reads the node it runs on; with --snapshot, a snapshot file.`,
		Example: `  # A snapshot attached to a ticket
  kubectl svctrace tui --snapshot snapshot.yaml

  # The cluster, through the node agents
  kubectl svctrace tui -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().IntVar(&o.concurrency, "max-concurrent", 16, "From a workstation: nodes read at once")
	cmd.Flags().DurationVar(&o.nodeTimeout, "node-timeout", time.Minute, "From a workstation: how long one node may take")
	cmd.Flags().DurationVar(&o.refresh, "refresh", 30*time.Second, "Re-read a live cluster this often (0: only on r); a snapshot is re-read only on r")
	cmd.Flags().StringVar(&o.logFile, "log-file", filepath.Join(os.TempDir(), "svctrace-tui.log"), "Where the UI's log goes (never to the screen)")
	cmd.Flags().BoolVar(&o.noColor, "no-color", false, "Draw without colour (also when NO_COLOR is set)")
	return cmd
}

func (o *tuiOptions) run(ctx context.Context) error {
	if f, ok := o.Out.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return &exitCodeError{code: exitError, err: errors.New("tui needs a terminal, and standard output is not one: for scripts use explain, trace or drift with -o json")}
	}
	// From a workstation without --node, every node is read.
	o.allNodes = o.snapshotFile == "" && !o.local && o.node == ""
	if err := o.validate(); err != nil {
		return err
	}
	o.live = survey.NewLive(o.family)
	logs, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("--log-file: %w", err)
	}
	defer logs.Close()
	log.SetOutput(logs)
	klog.SetOutput(logs)
	klog.LogToStderr(false)
	// Progress and warnings of the reads would draw over the screen.
	o.ErrOut = io.Discard

	// NO_COLOR, when set and not empty, asks for no colour (no-color.org).
	noColor := o.noColor || os.Getenv("NO_COLOR") != ""
	app := tui.New(tui.Options{Load: o.load, Every: o.every(), Mono: noColor, Namespace: o.tuiNamespace(), Static: o.snapshotFile != ""})
	p := tea.NewProgram(app, tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out))
	if o.snapshotFile == "" && o.objectsFile == "" {
		watchCtx, stop := context.WithCancel(ctx)
		defer stop()
		go o.watch(watchCtx, p)
	}
	if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}

// watch follows the cluster's Services and EndpointSlices (survey.Live):
// on a change, the UI shows the new objects over the node states already
// read, and the nodes are read again once kube-proxy has had time to sync.
// Without the right to watch, the UI says so and re-reads on its period.
func (o *tuiOptions) watch(ctx context.Context, p *tea.Program) {
	// The watch stops when this returns: at the end, or when it fails.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	cs, err := o.clientset()
	if err == nil {
		err = o.live.Watch(ctx, cs)
	}
	if err == nil {
		log.Printf("watching Services and EndpointSlices")
		o.live.Follow(ctx, func(sv *survey.Survey) {
			log.Printf("the API objects changed: showing them over the node states read at %s; reading again in %v", sv.Read.Format(time.RFC3339), survey.LiveSettle+time.Second)
			p.Send(tui.Updated(sv))
		}, func() { p.Send(tui.Reread()) })
		return
	}
	log.Printf("not watching the API: %v", err)
	note := "changes are not watched (" + err.Error() + ")"
	if o.refresh > 0 {
		note += ": re-read every " + o.refresh.String() + " and on r"
	}
	p.Send(tui.Note(note))
}

// every is how often the state is re-read: a file only on demand.
func (o *tuiOptions) every() time.Duration {
	if o.snapshotFile != "" {
		return 0
	}
	return o.refresh
}

// tuiNamespace is the namespace the Services screen opens on ("": every
// one), as drift would check it.
func (o *tuiOptions) tuiNamespace() string {
	ns, _ := o.namespaceScope()
	return ns
}

// load reads the state again, as the other commands read it, and
// surveys it.
func (o *tuiOptions) load(ctx context.Context) (*survey.Survey, error) {
	o.unread = nil
	s, err := o.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	source := "live"
	if o.snapshotFile != "" {
		source = filepath.Base(o.snapshotFile)
	} else if o.local {
		source = "live, node " + o.node
	}
	return o.live.Remember(s, source, o.unread), nil
}
