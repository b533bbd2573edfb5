package iptables

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/proxyrelease"
)

// The kube-proxy releases whose iptables layout Render writes: v1.30 to
// v1.37 write the same rules, each checked rule for rule against its
// release's real kube-proxy in the lab (TestReleases).
const layoutOldest, layoutNewest = 30, 37

// checkVersion refuses a version whose layout Render does not know.
func checkVersion(version string) error {
	minor, ok := proxyrelease.Minor(version)
	if !ok {
		return fmt.Errorf("kube-proxy version %q is not a version svctrace can read", version)
	}
	if minor < layoutOldest || minor > layoutNewest {
		return fmt.Errorf("kube-proxy %s: svctrace renders the iptables layout of %s, and a release outside them may lay its rules out otherwise", version, proxyrelease.Span(layoutOldest, layoutNewest))
	}
	return nil
}

// PlanRepair renders kube-proxy's iptables layout for the view and
// compares it with the node's rules of the family, in the backend given
// or the one holding kube-proxy's chains.
func (Loader) PlanRepair(in dataplane.RepairInput) (*dataplane.RepairPlan, bool, error) {
	if err := checkVersion(in.Version); err != nil {
		return nil, false, err
	}
	current, backend, ok, err := NodeLayout(in.State, in.Family, in.Backend)
	if err != nil || !ok {
		return nil, ok, err
	}
	if current.Empty() && len(in.View.Ports) == 0 {
		// kube-proxy may well not run this family here: nothing of it is
		// in the kernel, and no Service has an address of it.
		return &dataplane.RepairPlan{Family: in.Family, Backend: backend, Service: in.Service,
			Notes: []string{"kube-proxy's rules of this family are absent and no Service has an address of it: left alone"}}, true, nil
	}
	settings, notes := Settings(SettingsInput{Family: in.Family, Config: in.Config, NodeIPs: in.NodeIPs,
		LocalAddrs: in.LocalAddrs, PodCIDRs: in.PodCIDRs, Current: current})
	if !settings.Local.Implemented() && !settings.MasqueradeAll && len(in.View.Ports) > 0 {
		notes = append(notes, "no cluster CIDR is known (none in kube-proxy's configuration or rules): rendered without the local-traffic detector's rules, as kube-proxy does; give --cluster-cidr if the node's kube-proxy has one")
	}
	target, err := Render(in.View, settings)
	if err != nil {
		return nil, false, err
	}
	p := &dataplane.RepairPlan{Family: in.Family, Backend: backend, Notes: notes, Target: target, Service: in.Service}
	p.Changes = withEndpoints(Diff(current, target, scopeFor(in.Service)))
	p.Payload = Payload(p.Changes)
	// The dry run shows the refusal a write would meet.
	if err := CheckPayload(target, p.Changes, p.Payload, true); err != nil {
		return nil, false, err
	}
	return p, true, nil
}

func scopeFor(service string) *Scope {
	if service == "" {
		return nil
	}
	return &Scope{Service: service}
}

// withEndpoints names the endpoints each change's rules DNAT to.
func withEndpoints(cs []dataplane.Change) []dataplane.Change {
	for i := range cs {
		for _, x := range append(slices.Clone(cs[i].Add), cs[i].Remove...) {
			if _, ep, ok := strings.Cut(x, " -j DNAT --to-destination "); ok && !slices.Contains(cs[i].Endpoints, ep) {
				cs[i].Endpoints = append(cs[i].Endpoints, ep)
			}
		}
	}
	return cs
}

// Backup dumps the family's tables of the plan's backend.
func (Loader) Backup(ctx context.Context, p *dataplane.RepairPlan) (dataplane.BackupPart, error) {
	text, err := SaveKernel(ctx, p.Backend, p.Family)
	if err != nil {
		return dataplane.BackupPart{}, err
	}
	return dataplane.BackupPart{Mode: "iptables", Family: p.Family, Backend: p.Backend, Text: text}, nil
}

// Write takes kube-proxy's part of the kernel to the plan's render.
func (Loader) Write(ctx context.Context, p *dataplane.RepairPlan, started func()) (*dataplane.RepairPlan, error) {
	target, ok := p.Target.(*Layout)
	if !ok {
		return nil, fmt.Errorf("iptables: the plan holds no render")
	}
	return restoreLayout(ctx, p.Family, p.Backend, target, scopeFor(p.Service), true, started)
}

// WriteLayout takes the chains a layout's mode owns in the kernel's
// tables of a backend and family to the layout, in one restore per
// family, and reads them back. It returns the plan it wrote (no change:
// nothing was written).
func WriteLayout(ctx context.Context, family, backend string, target *Layout, started func()) (*dataplane.RepairPlan, error) {
	return restoreLayout(ctx, family, backend, target, nil, false, started)
}

// LayoutDiff is what takes the current layout to the target one, and the
// restore payload that writes it.
func LayoutDiff(current, target *Layout) ([]dataplane.Change, string) {
	cs := Diff(current, target, nil)
	return cs, Payload(cs)
}

// Restore puts kube-proxy's part of a backup back.
func (Loader) Restore(ctx context.Context, part dataplane.BackupPart) (*dataplane.RepairPlan, error) {
	target, err := ReadLayout(part.Family, part.Text)
	if err != nil {
		return nil, fmt.Errorf("backup, %s: %w", part.Family, err)
	}
	return restoreLayout(ctx, part.Family, part.Backend, target, nil, false, nil)
}

// restoreLayout writes what takes the kernel's layout to the target, then
// reads it back: what differs then is an error. The payload is read back
// before it is written (CheckPayload; rendered: the target is a render,
// whose jumps are kube-proxy's very own, not a backup).
func restoreLayout(ctx context.Context, family, backend string, target *Layout, scope *Scope, rendered bool, started func()) (*dataplane.RepairPlan, error) {
	p := &dataplane.RepairPlan{Family: family, Backend: backend, Target: target}
	current, err := KernelLayout(ctx, family, backend, target.own)
	if err != nil {
		return p, err
	}
	p.Changes = withEndpoints(Diff(current, target, scope))
	if len(p.Changes) == 0 {
		return p, nil
	}
	p.Payload = Payload(p.Changes)
	if err := CheckPayload(target, p.Changes, p.Payload, rendered); err != nil {
		return p, err
	}
	if err := RestoreKernel(ctx, backend, family, p.Payload, started); err != nil {
		return p, err
	}
	after, err := KernelLayout(ctx, family, backend, target.own)
	if err != nil {
		return p, err
	}
	if left := Diff(after, target, scope); len(left) > 0 {
		return p, fmt.Errorf("read back, the kernel still differs: %s %s %s", left[0].Op, left[0].Table, left[0].Object)
	}
	return p, nil
}

// KernelLayout reads the chains a mode owns (nil: iptables mode) from the
// kernel's tables of a backend and family.
func KernelLayout(ctx context.Context, family, backend string, own *Ownership) (*Layout, error) {
	text, err := SaveKernel(ctx, backend, family)
	if err != nil {
		return nil, err
	}
	l, err := ReadOwnedLayout(family, text, own)
	if err != nil {
		return nil, fmt.Errorf("%s %s dump: %w", family, backend, err)
	}
	return l, nil
}

var _ dataplane.Repairer = Loader{}
