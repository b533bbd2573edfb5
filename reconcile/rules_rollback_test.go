//go:build linux

package reconcile

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot"
)

// otherRules are another component's rules, which a rollback of
// kube-proxy's part leaves as they are.
const otherRules = `*filter
:OTHER - [0:0]
-A INPUT -s 192.0.2.1/32 -j ACCEPT
-A FORWARD -j OTHER
-A OTHER -d 192.0.2.2/32 -j DROP
COMMIT
*nat
:OTHER-NAT - [0:0]
-A POSTROUTING -j OTHER-NAT
-A OTHER-NAT -s 10.0.0.0/8 -j MASQUERADE
COMMIT
`

// A backup taken where kube-proxy had written nothing is put back: every
// chain of kube-proxy's the apply wrote goes, with the jumps to it, in
// every table, and other components' rules stay.
func TestRollbackToEmptyBackup(t *testing.T) {
	ns, p := driftedNode(t, false)
	netnstest.Run(t, ns, otherRules, "iptables-nft-restore", "--noflush")
	before := kernelRules(t, ns)
	backup := filepath.Join(t.TempDir(), "b.yaml")
	if _, err := applyIn(t, ns, p, ApplyOptions{Backup: backup}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kernelRules(t, ns), "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD") {
		t.Fatal("the apply wrote no jump to KUBE-FORWARD")
	}
	b, err := LoadBackup(backup)
	if err != nil {
		t.Fatal(err)
	}
	err = inNetns(t, ns, func() error {
		_, err := RollbackRules(context.Background(), b, RollbackTarget{Node: "node1", Mode: "iptables"})
		return err
	})
	if err != nil {
		t.Fatalf("rollback to the empty backup: %v", err)
	}
	if after := kernelRules(t, ns); after != before {
		t.Errorf("after the rollback:\n%s\nwant:\n%s", after, before)
	}
}

// The rollback after a failed write puts back everything the write could
// have touched, not only kube-proxy's chains: a rule added to a built-in
// chain, a chain of another's, another table.
func TestApplyRollbackPutsBackAllItTouched(t *testing.T) {
	ns, p := driftedNode(t, true)
	netnstest.Run(t, ns, otherRules, "iptables-nft-restore", "--noflush")
	before := kernelRules(t, ns)
	injected := "*filter\n:EVIL - [0:0]\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n-A FORWARD -j ACCEPT\n-A OTHER -j ACCEPT\nCOMMIT\n*raw\n-A PREROUTING -j NOTRACK\nCOMMIT\n"
	res, err := applyIn(t, ns, p, ApplyOptions{Backup: filepath.Join(t.TempDir(), "b.yaml"),
		Reread: func(context.Context) (*snapshot.Snapshot, error) {
			netnstest.Run(t, ns, injected, "iptables-nft-restore", "--noflush")
			return nil, errors.New("the node cannot be read")
		}})
	if err == nil || !strings.Contains(err.Error(), "rolled back to") || res == nil || !res.RolledBack {
		t.Fatalf("apply: %v, %+v: want it rolled back", err, res)
	}
	if after := kernelRules(t, ns); after != before {
		t.Errorf("after the rollback:\n%s\nwant:\n%s", after, before)
	}
}

// A table whose restore fails puts the tables already rolled back as they
// were: the family is never left half rolled back.
func TestRollbackFailingTableUndoesTheOthers(t *testing.T) {
	ns, _ := driftedNode(t, true)
	before := kernelRules(t, ns)
	text := netnstest.Run(t, ns, "", "iptables-nft-save")
	// filter loses a jump and a rule of KUBE-FORWARD; nat holds a rule no
	// restore takes, and comes after filter.
	text = strings.Replace(text, "-A KUBE-FORWARD -m conntrack --ctstate INVALID", "-A KUBE-FORWARD -m conntrack --ctstate UNTRACKED", 1)
	text = strings.Replace(text, "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000", "-A KUBE-MARK-MASQ -j NO-SUCH-TARGET", 1)
	b := &RulesBackup{Node: "node1", Mode: "iptables", Families: []dataplane.BackupPart{{Mode: "iptables", Family: "IPv4", Backend: "nf_tables", Text: text}}}
	err := inNetns(t, ns, func() error {
		_, err := RollbackRules(context.Background(), b, RollbackTarget{Node: "node1", Mode: "iptables"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "table nat") {
		t.Fatalf("rollback with a table that fails: %v, want an error naming table nat", err)
	}
	if after := kernelRules(t, ns); after != before {
		t.Errorf("after the failed rollback:\n%s\nwant:\n%s", after, before)
	}
}
