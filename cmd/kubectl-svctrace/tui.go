package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/survey"
	"github.com/svctrace/svctrace/tui"
)

type tuiOptions struct {
	*commonOptions
	refresh time.Duration
	logFile string
	noColor bool
	// live holds, on a live cluster, the watch of its objects and the
	// last state read.
	live liveState
}

// settle is how long after a change of its objects a Service's
// differences count as pending, not drift: kube-proxy syncs a change
// within about a second (its minSyncPeriod) on most nodes, and the node
// state is read again once this has passed.
const settle = 10 * time.Second

// liveState is shared by the reads (in the UI's commands) and the watch.
type liveState struct {
	mu      sync.Mutex
	watcher *inspect.Watcher
	last    *snapshot.Snapshot
	unread  []analysis.NodeFindings
	source  string
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

// watch follows the cluster's Services and EndpointSlices: on a change,
// the UI shows the new objects over the node states already read (the
// Service's differences pending), and the nodes are read again once
// kube-proxy has had time to sync. Without the right to watch, the UI
// says so and re-reads on its period.
func (o *tuiOptions) watch(ctx context.Context, p *tea.Program) {
	// The watch stops when this returns: at the end, or when it fails.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	cs, err := o.clientset()
	if err == nil {
		var w *inspect.Watcher
		changed := make(chan struct{}, 1)
		w, err = inspect.NewWatcher(cs, "", func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
		if err == nil {
			err = o.startWatch(ctx, w)
		}
		if err == nil {
			log.Printf("watching Services and EndpointSlices")
			o.follow(ctx, p, w, changed)
			return
		}
	}
	log.Printf("not watching the API: %v", err)
	note := "changes are not watched (" + err.Error() + ")"
	if o.refresh > 0 {
		note += ": re-read every " + o.refresh.String() + " and on r"
	}
	p.Send(tui.Note(note))
}

// startWatch lists and watches the objects until ctx ends, giving up if
// they are not listed within a minute: a user who may list but not watch
// never gets a synced cache.
func (o *tuiOptions) startWatch(ctx context.Context, w *inspect.Watcher) error {
	w.Run(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.WaitSynced(syncCtx); err != nil {
		return err
	}
	o.live.mu.Lock()
	o.live.watcher = w
	o.live.mu.Unlock()
	return nil
}

// follow turns the watch's changes into new surveys, a burst of changes
// into one, and schedules the read that confirms them.
func (o *tuiOptions) follow(ctx context.Context, p *tea.Program, w *inspect.Watcher, changed <-chan struct{}) {
	reread := time.NewTimer(time.Hour)
	reread.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reread.C:
			p.Send(tui.Reread())
		case <-changed:
			time.Sleep(300 * time.Millisecond) // let a burst land
			if sv := o.resurvey(w); sv != nil {
				log.Printf("the API objects changed: showing them over the node states read at %s; reading again in %v", sv.Read.Format(time.RFC3339), settle+time.Second)
				p.Send(tui.Updated(sv))
			}
			reread.Reset(settle + time.Second)
		}
	}
}

// resurvey is the last read with the watch's objects in place of those
// listed then.
func (o *tuiOptions) resurvey(w *inspect.Watcher) *survey.Survey {
	o.live.mu.Lock()
	last, unread, source := o.live.last, o.live.unread, o.live.source
	o.live.mu.Unlock()
	if last == nil {
		return nil
	}
	s := *last
	c := *last.Cluster
	s.Cluster = &c
	return o.survey(&s, w, source, unread)
}

// survey surveys s; with a watch, over its newest objects, and the
// differences of Services that changed since their node was read are
// pending.
func (o *tuiOptions) survey(s *snapshot.Snapshot, w *inspect.Watcher, source string, unread []analysis.NodeFindings) *survey.Survey {
	opts := survey.Options{Family: o.family, Unread: unread, Settle: settle}
	if w != nil {
		if c, err := w.Cluster(); err == nil && s.Cluster != nil {
			s.Cluster.Services, s.Cluster.EndpointSlices = c.Services, c.EndpointSlices
		}
		opts.Changed = w.Changes().Services
	}
	return survey.New(s, source, opts)
}

// every is how often the state is re-read: a file only on demand.
func (o *tuiOptions) every() time.Duration {
	if o.snapshotFile != "" {
		return 0
	}
	return o.refresh
}

// tuiNamespace is the namespace the Services screen opens on: every one
// with -A or a snapshot (whose namespace the kubeconfig does not know),
// else the kubeconfig's.
func (o *tuiOptions) tuiNamespace() string {
	if o.allNamespaces || (o.snapshotFile != "" && (o.configFlags.Namespace == nil || *o.configFlags.Namespace == "")) {
		return ""
	}
	return o.namespace
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
	o.live.mu.Lock()
	w := o.live.watcher
	o.live.last, o.live.unread, o.live.source = s, o.unread, source
	o.live.mu.Unlock()
	return o.survey(s, w, source, o.unread), nil
}
