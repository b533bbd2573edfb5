package iptables

import (
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Payload is the iptables-restore --noflush input that makes the changes,
// one table after another, each table in one commit. It names only
// kube-proxy's chains: a chain line flushes a chain it rewrites, rules
// are deleted and inserted one by one in the chains shared with other
// Services and in the built-in chains, and removed chains are flushed and
// then deleted once nothing jumps to them.
func Payload(changes []dataplane.Change) string {
	var b strings.Builder
	for _, table := range layoutTables {
		var cs []dataplane.Change
		for _, c := range changes {
			if c.Table == table {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		b.WriteString("*" + table + "\n")
		for _, c := range cs {
			if c.Op != OpEdit {
				b.WriteString(":" + c.Object + " - [0:0]\n")
			}
		}
		for _, c := range cs {
			if c.Op != OpEdit {
				continue
			}
			for _, x := range c.Remove {
				b.WriteString("-D" + strings.TrimPrefix(x, "-A") + "\n")
			}
		}
		for _, c := range cs {
			if c.Op != OpEdit {
				continue
			}
			// kube-proxy prepends its jumps, and a Service's rules may go
			// anywhere before the NodePort dispatch, which is appended.
			var head, tail []string
			for _, x := range c.Add {
				if strings.Contains(x, "kubernetes service nodeports;") {
					tail = append(tail, x)
				} else {
					head = append(head, x)
				}
			}
			for _, x := range slices.Backward(head) {
				b.WriteString("-I " + c.Object + " 1" + strings.TrimPrefix(x, "-A "+c.Object) + "\n")
			}
			for _, x := range tail {
				b.WriteString(x + "\n")
			}
		}
		for _, c := range cs {
			if c.Op == OpCreate || c.Op == OpRewrite {
				for _, x := range c.Add {
					b.WriteString(x + "\n")
				}
			}
		}
		for _, c := range cs {
			if c.Op == OpDelete {
				b.WriteString("-X " + c.Object + "\n")
			}
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}
