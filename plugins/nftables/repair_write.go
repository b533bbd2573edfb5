package nftables

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/detached"
)

// Write takes kube-proxy's table to the plan's render in one nft
// transaction, worked out against the table as it is then, and reads it
// back.
func (Loader) Write(ctx context.Context, p *dataplane.RepairPlan, started func()) (*dataplane.RepairPlan, error) {
	target, ok := p.Target.(*Layout)
	if !ok {
		return nil, fmt.Errorf("nftables: the plan holds no render")
	}
	return writeLayout(ctx, p.Family, target, p.Service, started)
}

// writeLayout writes what takes kube-proxy's table of the family to the
// target, then reads it back: what differs then is an error.
func writeLayout(ctx context.Context, family string, target *Layout, service string, started func()) (*dataplane.RepairPlan, error) {
	p := &dataplane.RepairPlan{Family: family, Target: target, Service: service}
	current, err := kernelLayout(family)
	if err != nil {
		return p, err
	}
	p.Changes = layoutChanges(current, target, service)
	if len(p.Changes) == 0 {
		return p, nil
	}
	p.Payload = Script(current, target, p.Changes)
	if err := CheckScript(current, target, p.Changes, p.Payload); err != nil {
		return p, err
	}
	if err := runNft(ctx, p.Payload, started); err != nil {
		return p, err
	}
	after, err := kernelLayout(family)
	if err != nil {
		return p, err
	}
	if left := layoutChanges(after, target, service); len(left) > 0 {
		return p, fmt.Errorf("read back, the kernel still differs: %s %s %s", left[0].Op, left[0].Table, left[0].Object)
	}
	return p, nil
}

// kernelLayout reads kube-proxy's table of the family from the kernel
// (an empty layout when there is none).
func kernelLayout(family string) (*Layout, error) {
	rs, err := ReadNetlink(0)
	if err != nil {
		return nil, err
	}
	l, ok := ReadLayout(rs, family)
	if !ok {
		l = newLayout(nftFamily(family))
	}
	return l, nil
}

// runNft runs a script with nft -f, one transaction. nft runs detached
// (see package detached), so once started it commits or fails as a whole
// even if svctrace is stopped.
func runNft(ctx context.Context, script string, started func()) error {
	w := detached.Write{
		Input:   []byte(script),
		Pattern: "svctrace-nft-*.nft",
		Command: func(file string) *exec.Cmd { return exec.Command("nft", "-f", file) },

		InputError: "writing the nft script",
		StartError: "nft",
		RunError:   "nft -f",
	}
	return w.Run(ctx, started)
}

// Script is the nft transaction that makes the changes in kube-proxy's
// table: objects created first, rewritten chains flushed and filled,
// elements removed then added, and removed objects deleted last, once
// nothing refers to them.
func Script(current, target *Layout, changes []dataplane.Change) string {
	tb := target.Family + " " + KubeProxyTable
	var b strings.Builder
	fmt.Fprintf(&b, "add table %s { comment %q ; }\n", tb, "rules for kube-proxy")
	set := func(c dataplane.Change) *LayoutSet {
		if s, ok := target.Sets[c.Object]; ok {
			return s
		}
		return current.Sets[c.Object]
	}
	each := func(f func(c dataplane.Change, s *LayoutSet)) {
		for _, c := range changes {
			f(c, set(c))
		}
	}
	each(func(c dataplane.Change, s *LayoutSet) {
		switch {
		case s == nil && c.Op == "create":
			b.WriteString(chainDecl(tb, c.Object, target.Chains[c.Object]))
		case s != nil && c.Op == "rewrite":
			fmt.Fprintf(&b, "delete %s %s %s\n", setKind(current.Sets[c.Object]), tb, c.Object)
			b.WriteString(setDecl(tb, c.Object, s))
		case s != nil && c.Op == "create":
			b.WriteString(setDecl(tb, c.Object, s))
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s == nil && (c.Op == "rewrite" || c.Op == "delete") {
			fmt.Fprintf(&b, "flush chain %s %s\n", tb, c.Object)
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s == nil && (c.Op == "create" || c.Op == "rewrite") {
			for _, r := range c.Add {
				fmt.Fprintf(&b, "add rule %s %s %s\n", tb, c.Object, r)
			}
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s != nil && c.Op == "edit" {
			for _, e := range c.Remove {
				fmt.Fprintf(&b, "delete element %s %s { %s }\n", tb, c.Object, elementKey(e))
			}
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s != nil && c.Op != "delete" {
			for _, e := range c.Add {
				fmt.Fprintf(&b, "add element %s %s { %s }\n", tb, c.Object, e)
			}
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s != nil && c.Op == "delete" {
			fmt.Fprintf(&b, "delete %s %s %s\n", setKind(s), tb, c.Object)
		}
	})
	each(func(c dataplane.Change, s *LayoutSet) {
		if s == nil && c.Op == "delete" {
			fmt.Fprintf(&b, "delete chain %s %s\n", tb, c.Object)
		}
	})
	return b.String()
}

func chainDecl(tb, name string, c *LayoutChain) string {
	var opts []string
	if c != nil && c.Hook != "" {
		opts = append(opts, fmt.Sprintf("type %s hook %s priority %d ;", c.Type, c.Hook, c.Prio))
	}
	if c != nil && c.Comment != "" {
		opts = append(opts, fmt.Sprintf("comment %q ;", c.Comment))
	}
	if len(opts) == 0 {
		return fmt.Sprintf("add chain %s %s\n", tb, name)
	}
	return fmt.Sprintf("add chain %s %s { %s }\n", tb, name, strings.Join(opts, " "))
}

func setKind(s *LayoutSet) string {
	if s != nil && s.IsMap {
		return "map"
	}
	return "set"
}

// setDecl declares a set or map as kube-proxy does: an affinity set is
// dynamic (the kernel lists only its timeout flag).
func setDecl(tb, name string, s *LayoutSet) string {
	typ := strings.Join(s.KeyType, " . ")
	if s.IsMap {
		typ += " : " + strings.Join(s.DataType, " . ")
	}
	opts := []string{"type " + typ + " ;"}
	flags := slices.Clone(s.Flags)
	if strings.HasPrefix(name, prefixAffinity) && !slices.Contains(flags, "dynamic") {
		flags = append([]string{"dynamic"}, flags...)
	}
	if len(flags) > 0 {
		opts = append(opts, "flags "+strings.Join(flags, ",")+" ;")
	}
	if s.Timeout > 0 {
		opts = append(opts, fmt.Sprintf("timeout %ds ;", s.Timeout))
	}
	if s.Comment != "" {
		opts = append(opts, fmt.Sprintf("comment %q ;", s.Comment))
	}
	return fmt.Sprintf("add %s %s %s { %s }\n", setKind(s), tb, name, strings.Join(opts, " "))
}

// elementKey is an element's key, for its deletion: without its value
// and comment.
func elementKey(e string) string {
	key, _, _ := strings.Cut(e, " : ")
	key, _, _ = strings.Cut(key, " comment ")
	return key
}

var _ dataplane.Repairer = Loader{}
