package ipvs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"time"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/detached"
	"github.com/svctrace/svctrace/plugins/iptables"
)

var (
	_ dataplane.Repairer       = Loader{}
	_ dataplane.DetachedWriter = Loader{}
)

// Backup reads ipvs mode's state of the plan's family from the kernel:
// the IPVS table, the ipsets, kube-ipvs0's addresses and the iptables
// rules of the backend, each in its tool's text, in sections.
//
// It refuses, before anything is written, while a journal records an
// earlier write whose end nobody saw (see unfinished).
func (l Loader) Backup(ctx context.Context, p *dataplane.RepairPlan) (dataplane.BackupPart, error) {
	if err := unfinished(ctx, l.StateDir, false, writerWait); err != nil {
		return dataplane.BackupPart{}, err
	}
	rt, ok := p.Target.(*repairTarget)
	if !ok {
		// A family the plan leaves alone: nothing of it is written, and
		// nothing is to be put back.
		return dataplane.BackupPart{Mode: "ipvs", Family: p.Family}, nil
	}
	text, err := kernelText(ctx, p.Family, rt.backend)
	if err != nil {
		return dataplane.BackupPart{}, err
	}
	return dataplane.BackupPart{Mode: "ipvs", Family: p.Family, Backend: rt.backend, Text: text}, nil
}

// Write takes ipvs mode's state to the plan's render. The kernel writes
// run in a process of svctrace's own, in a process group of its own,
// which works the changes out again against the kernel of that moment
// and makes them: once it has started, stopping svctrace does not stop
// it halfway. Then the kernel is read back: what still differs is an
// error.
//
// A journal in the state directory records the write from before the
// writer starts until the read-back found the kernel as rendered. Where
// the writer dies with svctrace (an OOM kill takes the agent's whole
// cgroup), the journal stays, and the next apply refuses until the
// backup is put back (Restore), unless the writer recorded it finished.
func (l Loader) Write(ctx context.Context, p *dataplane.RepairPlan, started func()) (*dataplane.RepairPlan, error) {
	rt, ok := p.Target.(*repairTarget)
	if !ok {
		return nil, errors.New("ipvs: the plan holds no render")
	}
	if err := unfinished(ctx, l.StateDir, false, writerWait); err != nil {
		return nil, err
	}
	j := journalEntry{Family: p.Family, Kind: journalApply, Backup: p.Backup}
	return writeTarget(ctx, rt.backend, p.Service, rt.target, started, journalPath(l.StateDir, p.Family), j)
}

// Restore puts ipvs mode's part of a backup back: its virtual servers,
// kube-proxy's ipsets with their members, kube-ipvs0's addresses and the
// iptables chains of the mode. It puts back what an apply whose writer
// was killed left half done: the family's journal is removed once the
// kernel holds the backup's state. A writer still running is waited for
// (writerWait), then refused.
func (l Loader) Restore(ctx context.Context, part dataplane.BackupPart) (*dataplane.RepairPlan, error) {
	if part.Text == "" {
		return &dataplane.RepairPlan{Family: part.Family}, nil
	}
	st, err := parseText(part.Family, part.Text)
	if err != nil {
		return nil, fmt.Errorf("backup, %s: %w", part.Family, err)
	}
	t := &Target{Family: part.Family, Virtuals: st.Virtuals, Addrs: st.Addrs, Sets: map[string]*IPSet{}, Rules: st.Rules, owners: map[string]string{}}
	for name := range newSets(part.Family) {
		if s := st.Sets.Sets[name]; s != nil {
			t.Sets[name] = s
		}
	}
	if err := unfinished(ctx, l.StateDir, true, writerWait); err != nil {
		return nil, err
	}
	journal := journalPath(l.StateDir, part.Family)
	p, err := writeTarget(ctx, part.Backend, "", t, nil, journal, journalEntry{Family: part.Family, Kind: journalRollback})
	if err != nil {
		return p, err
	}
	// Put back with nothing to change (a writer killed before its first
	// change), the family's journal goes too.
	return p, endJournal(journal)
}

// job is what the writing process is given.
type job struct {
	Family   string            `json:"family"`
	Backend  string            `json:"backend"`
	Service  string            `json:"service,omitempty"`
	Virtuals []*Virtual        `json:"virtuals"`
	Addrs    []netip.Prefix    `json:"addrs"`
	Sets     []*IPSet          `json:"sets"`
	Rules    json.RawMessage   `json:"rules"`
	Owners   map[string]string `json:"owners,omitempty"`
	// Journal is the write's journal, where the writer records itself,
	// and its end.
	Journal string `json:"journal,omitempty"`
}

// writeTarget runs the write of entry's family and kind in its own
// process, then reads the kernel back, with entry as the journal at the
// path from before the writer starts until the read-back: one a failed
// write leaves behind is removed by the rollback that follows it.
func writeTarget(ctx context.Context, backend, service string, t *Target, started func(), journal string, entry journalEntry) (*dataplane.RepairPlan, error) {
	family := entry.Family
	p := &dataplane.RepairPlan{Family: family, Backend: backend, Service: service}
	cur, err := kernelState(ctx, family, backend)
	if err != nil {
		return p, err
	}
	d := diff(cur, t, service)
	p.Changes, p.Payload = d.changes(t), d.payload(family)
	if d.empty() {
		return p, nil
	}
	// Refused here, the writer is not started; it checks its own delta
	// again right before it writes (applyDelta).
	if err := d.checkRules(); err != nil {
		return p, err
	}
	rules, err := json.Marshal(t.Rules)
	if err != nil {
		return p, fmt.Errorf("the repair job's rules: %w", err)
	}
	j := job{Family: family, Backend: backend, Service: service, Virtuals: t.Virtuals, Addrs: t.Addrs, Rules: rules, Owners: t.owners, Journal: journal}
	for _, name := range sortedKeys(t.Sets) {
		j.Sets = append(j.Sets, t.Sets[name])
	}
	entry.Started = time.Now().UTC()
	if err := writeJournal(journal, entry); err != nil {
		return p, fmt.Errorf("nothing written: %w", err)
	}
	began := false
	if err := runDetached(ctx, j, func() {
		began = true
		if started != nil {
			started()
		}
	}); err != nil {
		if !began {
			// No writer started: nothing was written.
			_ = endJournal(journal)
		}
		return p, err
	}
	after, err := kernelState(ctx, family, backend)
	if err != nil {
		return p, err
	}
	if left := diff(after, t, service).changes(t); len(left) > 0 {
		return p, fmt.Errorf("read back, the kernel still differs: %s %s %s", left[0].Op, left[0].Table, left[0].Object)
	}
	return p, endJournal(journal)
}

// runDetached hands a job to a process of svctrace's own (the hidden
// command dataplane.DetachedWriteArgs names), run detached (see package
// detached), and waits for it.
func runDetached(ctx context.Context, j job, started func()) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding svctrace's own binary, which writes the repair: %w", err)
	}
	// The same bytes json.Encoder writes, newline included.
	input, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("writing the repair job: %w", err)
	}
	w := detached.Write{
		Input:   append(input, '\n'),
		Pattern: "svctrace-ipvs-*.json",
		Command: func(file string) *exec.Cmd {
			return exec.Command(self, dataplane.DetachedWriteArgs("ipvs", file)...)
		},

		InputError: "writing the repair job",
		StartError: "starting the repair's writer",
		RunError:   "writing ipvs mode's state",
	}
	return w.Run(ctx, started)
}

// WriteDetached is the writing process: it reads the job, works the
// changes out against the kernel as it is now, and makes them.
func (Loader) WriteDetached(ctx context.Context, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	// Read, the job file is not needed again (svctrace, stopped, would
	// not remove it).
	_ = os.Remove(file)
	var j job
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	rules := iptables.NewLayout(j.Family, Ownership)
	if err := json.Unmarshal(j.Rules, rules); err != nil {
		return fmt.Errorf("%s: the rules: %w", file, err)
	}
	t := &Target{Family: j.Family, Virtuals: j.Virtuals, Addrs: j.Addrs, Sets: map[string]*IPSet{}, Rules: rules, owners: j.Owners}
	if t.owners == nil {
		t.owners = map[string]string{}
	}
	for _, s := range j.Sets {
		t.Sets[s.Name] = s
	}
	if j.Journal != "" {
		if err := updateJournal(j.Journal, func(e *journalEntry) { e.Writer = os.Getpid() }); err != nil {
			return fmt.Errorf("nothing written: %w", err)
		}
	}
	cur, err := kernelState(ctx, j.Family, j.Backend)
	if err == nil {
		err = applyDelta(ctx, diff(cur, t, j.Service), j.Family, j.Backend)
	}
	if j.Journal == "" {
		return err
	}
	// The end is recorded for the next apply, in case nobody waits for
	// this process any more.
	jerr := updateJournal(j.Journal, func(e *journalEntry) {
		if e.Finished = err == nil; err != nil {
			e.Failed = err.Error()
		}
	})
	return errors.Join(err, jerr)
}
