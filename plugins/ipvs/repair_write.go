package ipvs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/procgroup"
	"github.com/svctrace/svctrace/plugins/iptables"
)

var (
	_ dataplane.Repairer       = Loader{}
	_ dataplane.DetachedWriter = Loader{}
)

// Backup reads ipvs mode's state of the plan's family from the kernel:
// the IPVS table, the ipsets, kube-ipvs0's addresses and the iptables
// rules of the backend, each in its tool's text, in sections.
func (Loader) Backup(ctx context.Context, p *dataplane.RepairPlan) (dataplane.BackupPart, error) {
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
func (Loader) Write(ctx context.Context, p *dataplane.RepairPlan, started func()) (*dataplane.RepairPlan, error) {
	rt, ok := p.Target.(*repairTarget)
	if !ok {
		return nil, errors.New("ipvs: the plan holds no render")
	}
	return writeTarget(ctx, p.Family, rt.backend, p.Service, rt.target, started)
}

// Restore puts ipvs mode's part of a backup back: its virtual servers,
// kube-proxy's ipsets with their members, kube-ipvs0's addresses and the
// iptables chains of the mode.
func (Loader) Restore(ctx context.Context, part dataplane.BackupPart) (*dataplane.RepairPlan, error) {
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
	return writeTarget(ctx, part.Family, part.Backend, "", t, nil)
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
}

// writeTarget runs the write in its own process, then reads the kernel
// back.
func writeTarget(ctx context.Context, family, backend, service string, t *Target, started func()) (*dataplane.RepairPlan, error) {
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
		return p, err
	}
	j := job{Family: family, Backend: backend, Service: service, Virtuals: t.Virtuals, Addrs: t.Addrs, Rules: rules, Owners: t.owners}
	for _, name := range sortedKeys(t.Sets) {
		j.Sets = append(j.Sets, t.Sets[name])
	}
	if err := runDetached(ctx, j, started); err != nil {
		return p, err
	}
	after, err := kernelState(ctx, family, backend)
	if err != nil {
		return p, err
	}
	if left := diff(after, t, service).changes(t); len(left) > 0 {
		return p, fmt.Errorf("read back, the kernel still differs: %s %s %s", left[0].Op, left[0].Table, left[0].Object)
	}
	return p, nil
}

// runDetached hands a job to a process of svctrace's own (the hidden
// command dataplane.DetachedWriteArgs names), in a process group of its
// own, and waits for it.
func runDetached(ctx context.Context, j job, started func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding svctrace's own binary, which writes the repair: %w", err)
	}
	f, err := os.CreateTemp("", "svctrace-ipvs-*.json")
	if err != nil {
		return fmt.Errorf("writing the repair job: %w", err)
	}
	defer os.Remove(f.Name())
	if err := json.NewEncoder(f).Encode(j); err != nil {
		f.Close()
		return fmt.Errorf("writing the repair job: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the repair job: %w", err)
	}
	// Its output goes to a file, not a pipe: a pipe whose reader is gone
	// (svctrace stopped) would stop it at its first line.
	out, err := os.CreateTemp("", "svctrace-ipvs-*.log")
	if err != nil {
		return fmt.Errorf("starting the repair's writer: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := exec.Command(self, dataplane.DetachedWriteArgs("ipvs", f.Name())...)
	cmd.Stdout, cmd.Stderr = out, out
	procgroup.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the repair's writer: %w", err)
	}
	if started != nil {
		started()
	}
	if err := cmd.Wait(); err != nil {
		text, _ := os.ReadFile(out.Name())
		return fmt.Errorf("writing ipvs mode's state: %w: %s", err, strings.TrimSpace(string(text)))
	}
	return nil
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
	cur, err := kernelState(ctx, j.Family, j.Backend)
	if err != nil {
		return err
	}
	return applyDelta(ctx, diff(cur, t, j.Service), j.Family, j.Backend)
}
