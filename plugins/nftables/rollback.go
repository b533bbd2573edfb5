package nftables

import (
	"context"
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
)

// Backup reads the node's ruleset over netlink, as nft's JSON.
func (Loader) Backup(_ context.Context, p *dataplane.RepairPlan) (dataplane.BackupPart, error) {
	rs, err := ReadNetlink(0)
	if err != nil {
		return dataplane.BackupPart{}, fmt.Errorf("backing up the nftables ruleset: %w", err)
	}
	text, err := RenderJSON(rs)
	if err != nil {
		return dataplane.BackupPart{}, fmt.Errorf("backing up the nftables ruleset: %w", err)
	}
	return dataplane.BackupPart{Mode: "nftables", Family: p.Family, Text: string(text)}, nil
}

// Restore puts kube-proxy's table of a backup back, as it was: its
// chains, sets and maps with their elements (an affinity set the write
// removed comes back with the clients it pinned), in one transaction, then
// reads it back. A backup taken where the family had no such table
// removes the table, with all it holds, so a write that created it leaves
// no empty table behind.
func (Loader) Restore(ctx context.Context, part dataplane.BackupPart) (*dataplane.RepairPlan, error) {
	rs, err := Parse("backup", []byte(part.Text))
	if err != nil {
		return nil, fmt.Errorf("backup, %s: %w", part.Family, err)
	}
	target, ok := ReadLayout(rs, part.Family)
	if !ok {
		return removeTable(ctx, part.Family)
	}
	return writeLayout(ctx, part.Family, target, "", nil)
}

// removeTable deletes kube-proxy's table of the family, when the kernel
// has one, in one transaction, and reads the kernel back.
func removeTable(ctx context.Context, family string) (*dataplane.RepairPlan, error) {
	p := &dataplane.RepairPlan{Family: family}
	rs, err := ReadNetlink(0)
	if err != nil {
		return p, fmt.Errorf("reading kube-proxy's table before removing it: %w", err)
	}
	current, ok := ReadLayout(rs, family)
	if !ok {
		return p, nil
	}
	tb := current.Family + " " + KubeProxyTable
	p.Changes = append(layoutChanges(current, newLayout(current.Family), ""), dataplane.Change{Table: tb, Object: "table", Op: "delete"})
	p.Payload = "delete table " + tb + "\n"
	if err := checkRemoveTable(p.Payload, current.Family); err != nil {
		return p, err
	}
	if err := runNft(ctx, p.Payload, nil); err != nil {
		return p, fmt.Errorf("removing table %s: %w", tb, err)
	}
	if rs, err = ReadNetlink(0); err != nil {
		return p, fmt.Errorf("reading back after removing table %s: %w", tb, err)
	}
	if _, ok := ReadLayout(rs, family); ok {
		return p, fmt.Errorf("read back, table %s is still there", tb)
	}
	return p, nil
}

// checkRemoveTable reads the script that removes the table back, as
// CheckScript reads a repair's: it is the one command deleting
// kube-proxy's table of the family, and nothing else.
func checkRemoveTable(script, family string) error {
	cmds, err := readScript(script)
	if err != nil {
		return fmt.Errorf("the nft script: %w: refusing to write it", err)
	}
	want := "delete table " + family + " " + KubeProxyTable
	if len(cmds) != 1 || cmds[0].String() != want {
		return fmt.Errorf("the nft script %q is not %q: refusing to write it", script, want)
	}
	return nil
}
