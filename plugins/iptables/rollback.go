package iptables

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Rollback puts a backup of a family's tables back, every table in one
// restore of its own, each committed whole: the chains kube-proxy owns
// and its jumps in the built-in chains (exact: every chain of every table
// the backup or the kernel holds, with the built-in chains' policies).
// Rules of other chains that jump to a chain the backup does not hold are
// deleted first, so no chain is deleted while something jumps to it. If a
// table fails, the tables already written are put back as they were, so
// the family is never left half rolled back. Then the kernel is read back:
// what still differs is an error.
func (Loader) Rollback(ctx context.Context, part dataplane.BackupPart, exact bool) (*dataplane.RepairPlan, error) {
	p := &dataplane.RepairPlan{Family: part.Family, Backend: part.Backend}
	want, err := readSave(part.Text)
	if err != nil {
		return p, fmt.Errorf("backup, %s: %w", part.Family, err)
	}
	text, err := SaveKernel(ctx, part.Backend, part.Family)
	if err != nil {
		return p, err
	}
	have, err := readSave(text)
	if err != nil {
		return p, fmt.Errorf("%s %s dump: %w", part.Family, part.Backend, err)
	}
	done := map[string]*saveTable{} // the tables written, as written
	for _, name := range tableNames(have, want) {
		h, d := bare(have[name], want[name]), bare(want[name], have[name])
		if !exact {
			d = ownedPart(name, h, d)
		}
		payload, changes := tablePayload(name, h, d, exact)
		if payload == "" {
			continue
		}
		if err := RestoreKernel(ctx, part.Backend, part.Family, payload, nil); err != nil {
			for t, written := range done {
				back, _ := tablePayload(t, written, bare(have[t], want[t]), true)
				if uerr := RestoreKernel(context.WithoutCancel(ctx), part.Backend, part.Family, back, nil); uerr != nil {
					err = fmt.Errorf("%w; putting table %s back as it was failed too: %v", err, t, uerr)
				}
			}
			return p, fmt.Errorf("table %s: %w", name, err)
		}
		done[name] = d
		p.Payload += payload
		p.Changes = append(p.Changes, changes...)
	}
	if text, err = SaveKernel(ctx, part.Backend, part.Family); err != nil {
		return p, err
	}
	after, err := readSave(text)
	if err != nil {
		return p, err
	}
	for _, name := range tableNames(after, want) {
		a, w := bare(after[name], want[name]), bare(want[name], after[name])
		if !exact {
			a, w = owned(name, a), owned(name, w)
		}
		if _, left := tablePayload(name, a, w, true); len(left) > 0 {
			return p, fmt.Errorf("read back, the kernel still differs from the backup: %s %s %s", left[0].Op, name, left[0].Object)
		}
	}
	return p, nil
}

// saveTable is one table of an iptables-save dump.
type saveTable struct {
	chains []string            // as declared
	policy map[string]string   // "-" for a chain of the user's
	rules  map[string][]string // "-A CHAIN …" lines, in order
}

// readSave reads an iptables-save dump, by table.
func readSave(text string) (map[string]*saveTable, error) {
	tables := map[string]*saveTable{}
	var t *saveTable
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \r")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "*"):
			t = &saveTable{policy: map[string]string{}, rules: map[string][]string{}}
			tables[line[1:]] = t
		case line == "COMMIT":
			t = nil
		case t == nil:
			return nil, fmt.Errorf("line %d: %q is outside any table", n+1, line)
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: %q declares no chain", n+1, line)
			}
			t.chains, t.policy[f[0]] = append(t.chains, f[0]), f[1]
		case strings.HasPrefix(line, "-A "):
			chain, _, _ := strings.Cut(line[3:], " ")
			if t.policy[chain] == "" {
				return nil, fmt.Errorf("line %d: rule of chain %s, which the dump does not declare", n+1, chain)
			}
			t.rules[chain] = append(t.rules[chain], line)
		default:
			return nil, fmt.Errorf("line %d: %q is not a line of iptables-save", n+1, line)
		}
	}
	return tables, nil
}

// tableNames are the tables of two dumps, sorted.
func tableNames(a, b map[string]*saveTable) []string {
	all := maps.Clone(a)
	maps.Copy(all, b)
	return slices.Sorted(maps.Keys(all))
}

// bare is t, or for a table t's dump lacks, the table as the kernel makes
// it: other's built-in chains, empty, accepting.
func bare(t, other *saveTable) *saveTable {
	if t != nil {
		return t
	}
	out := &saveTable{policy: map[string]string{}, rules: map[string][]string{}}
	for _, c := range other.chains {
		if other.policy[c] != "-" {
			out.chains, out.policy[c] = append(out.chains, c), "ACCEPT"
		}
	}
	return out
}

// ownedPart is have with kube-proxy's part as in want: its chains, its
// jumps in the built-in chains (missing ones first, as kube-proxy inserts
// them), and without the rules of other chains that jump to a chain of
// its that want does not hold.
func ownedPart(table string, have, want *saveTable) *saveTable {
	d := &saveTable{policy: maps.Clone(have.policy), rules: map[string][]string{}}
	for _, c := range have.chains {
		if iptablesMode.owns(table, c) && want.policy[c] == "" {
			delete(d.policy, c)
			continue
		}
		d.chains = append(d.chains, c)
		d.rules[c] = slices.DeleteFunc(slices.Clone(have.rules[c]), func(x string) bool {
			t := ruleTarget(x)
			return iptablesMode.owns(table, t) && want.policy[t] == ""
		})
	}
	for _, c := range want.chains {
		if !iptablesMode.owns(table, c) {
			if want.policy[c] != "-" && d.policy[c] != "" {
				// Only the rules' count matters (see tablePayload).
				jumps := slices.DeleteFunc(slices.Clone(want.rules[c]), func(x string) bool { return !iptablesMode.ownsJump(table, x) })
				others := slices.DeleteFunc(d.rules[c], func(x string) bool { return iptablesMode.ownsJump(table, x) })
				d.rules[c] = append(jumps, others...)
			}
			continue
		}
		if d.policy[c] == "" {
			d.chains, d.policy[c] = append(d.chains, c), "-"
		}
		d.rules[c] = want.rules[c]
	}
	return d
}

// owned is kube-proxy's part of a table: its chains, and its jumps in the
// built-in chains, sorted (their order among other rules is not kept).
func owned(table string, t *saveTable) *saveTable {
	out := &saveTable{policy: map[string]string{}, rules: map[string][]string{}}
	for _, c := range t.chains {
		switch {
		case iptablesMode.owns(table, c):
			out.chains, out.policy[c], out.rules[c] = append(out.chains, c), "-", t.rules[c]
		case t.policy[c] != "-":
			out.chains, out.policy[c] = append(out.chains, c), "ACCEPT"
			out.rules[c] = slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(t.rules[c]), func(x string) bool { return !iptablesMode.ownsJump(table, x) })))
		}
	}
	return out
}

// tablePayload is the iptables-restore --noflush input that takes one
// table from have to want, committed whole, and the changes it makes:
// chains made or flushed first, then rules deleted from the built-in
// chains (exact: those flushed), then rules written, and chains deleted
// last, when nothing jumps to them. Without exact, kube-proxy's jumps in
// the built-in chains compare as a set, and the missing ones are inserted
// first; other rules there are not touched.
func tablePayload(table string, have, want *saveTable, exact bool) (string, []dataplane.Change) {
	var decl, edits, adds, dels []string
	var cs []dataplane.Change
	for _, c := range want.chains {
		op := OpRewrite
		switch {
		case want.policy[c] != "-":
			continue
		case have.policy[c] == "":
			op = OpCreate
		case slices.Equal(have.rules[c], want.rules[c]):
			continue
		}
		decl, adds = append(decl, ":"+c+" - [0:0]"), append(adds, want.rules[c]...)
		cs = append(cs, dataplane.Change{Table: table, Object: c, Op: op, Add: want.rules[c], Remove: have.rules[c]})
	}
	for _, c := range have.chains {
		if have.policy[c] == "-" && want.policy[c] == "" {
			decl, dels = append(decl, ":"+c+" - [0:0]"), append(dels, "-X "+c)
			cs = append(cs, dataplane.Change{Table: table, Object: c, Op: OpDelete, Remove: have.rules[c]})
		}
	}
	for _, c := range want.chains {
		pol := want.policy[c]
		if pol == "-" {
			continue
		}
		var add, remove []string
		if exact && have.policy[c] != pol {
			decl, add, remove = append(decl, ":"+c+" "+pol+" [0:0]"), []string{"policy " + pol}, []string{"policy " + have.policy[c]}
		}
		switch {
		case exact && !slices.Equal(have.rules[c], want.rules[c]):
			edits, adds = append(edits, "-F "+c), append(adds, want.rules[c]...)
			add, remove = append(add, want.rules[c]...), append(remove, have.rules[c]...)
		case !exact:
			add, remove = setDiff(have.rules[c], want.rules[c])
			for _, x := range remove {
				edits = append(edits, "-D"+strings.TrimPrefix(x, "-A"))
			}
			for _, x := range slices.Backward(add) {
				adds = append(adds, "-I "+c+" 1"+strings.TrimPrefix(x, "-A "+c))
			}
		}
		if len(add)+len(remove) > 0 {
			cs = append(cs, dataplane.Change{Table: table, Object: c, Op: OpEdit, Add: add, Remove: remove})
		}
	}
	if len(cs) == 0 {
		return "", nil
	}
	lines := slices.Concat([]string{"*" + table}, decl, edits, adds, dels, []string{"COMMIT", ""})
	return strings.Join(lines, "\n"), cs
}
