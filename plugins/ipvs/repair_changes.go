package ipvs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Change operations, as the iptables plane names them.
const (
	opCreate = "create"
	opDelete = "delete"
	opEdit   = "edit"
)

// changes are the delta as a plan lists them: the ipsets, the virtual
// servers, kube-ipvs0's addresses, then the iptables chains. Entries are
// in the text of the tools that show them (ipset save, ipvsadm -Ln, ip
// addr, iptables-save).
func (d *delta) changes(t *Target) []dataplane.Change {
	var out []dataplane.Change
	for _, s := range d.newSets {
		c := dataplane.Change{Table: "ipset", Object: s.Name, Op: opCreate}
		for _, m := range s.Members {
			c.Add = append(c.Add, m.Text)
		}
		c.Service = common(t, s.Name, c.Add)
		out = append(out, c)
	}
	for _, name := range slices.Sorted(maps.Keys(merge(d.addMembers, d.delMembers))) {
		c := dataplane.Change{Table: "ipset", Object: name, Op: opEdit, Add: d.addMembers[name], Remove: d.delMembers[name]}
		c.Service = common(t, name, c.Add)
		out = append(out, c)
	}
	for _, v := range d.newVirtuals {
		c := dataplane.Change{Table: "ipvs", Object: v.Key(), Op: opCreate, Service: t.owners[v.Key()], Add: []string{v.String()}}
		for _, r := range v.Reals {
			c.Add = append(c.Add, r.String())
			c.Endpoints = append(c.Endpoints, r.Addr.String())
		}
		out = append(out, c)
	}
	edited := map[string]*Virtual{}
	for _, v := range d.setVirtuals {
		edited[v.Key()] = v
	}
	for k := range merge(d.addReals, d.setReals, d.delReals) {
		if _, ok := edited[k]; !ok {
			edited[k] = nil // its real servers change, not its line
		}
	}
	for _, k := range slices.Sorted(maps.Keys(edited)) {
		c := dataplane.Change{Table: "ipvs", Object: k, Op: opEdit, Service: t.owners[k]}
		if v := edited[k]; v != nil {
			c.Add = append(c.Add, v.String())
		}
		for _, r := range append(slices.Clone(d.addReals[k]), d.setReals[k]...) {
			c.Add = append(c.Add, r.String())
			c.Endpoints = append(c.Endpoints, r.Addr.String())
		}
		for _, r := range d.delReals[k] {
			c.Remove = append(c.Remove, r.String())
			c.Endpoints = append(c.Endpoints, r.Addr.String())
		}
		out = append(out, c)
	}
	for _, v := range d.delVirtuals {
		c := dataplane.Change{Table: "ipvs", Object: v.Key(), Op: opDelete, Remove: []string{v.String()}}
		for _, r := range v.Reals {
			c.Remove = append(c.Remove, r.String())
		}
		out = append(out, c)
	}
	for _, s := range d.delSets {
		c := dataplane.Change{Table: "ipset", Object: s.Name, Op: opDelete}
		for _, m := range s.Members {
			c.Remove = append(c.Remove, m.Text)
		}
		out = append(out, c)
	}
	if len(d.addAddrs)+len(d.delAddrs) > 0 {
		c := dataplane.Change{Table: Dummy, Object: "addresses", Op: opEdit}
		for _, a := range d.addAddrs {
			c.Add = append(c.Add, a.String())
		}
		for _, a := range d.delAddrs {
			c.Remove = append(c.Remove, a.String())
		}
		if len(d.addAddrs) == 1 && len(d.delAddrs) == 0 {
			c.Service = t.owners[d.addAddrs[0].Addr().String()]
		}
		out = append(out, c)
	}
	return append(out, d.rules...)
}

// common is the Service port owning every member added to a set, or "".
func common(t *Target, set string, members []string) string {
	svc := ""
	for i, m := range members {
		o := t.owners[set+" "+m]
		if i > 0 && o != svc {
			return ""
		}
		svc = o
	}
	return svc
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// merge is the union of maps' keys.
func merge[V any](ms ...map[string]V) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// payload is what a write does, in the tools' own forms: ipset restore
// lines, ipvsadm-restore lines (written over netlink), ip addr commands
// for kube-ipvs0, then the iptables-restore --noflush input of the
// family, in the order the write makes them (what is added first, what
// is removed last).
func (d *delta) payload(family string) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	for _, s := range d.newSets {
		line("create %s", createArgs(s))
	}
	for _, s := range d.newSets {
		for _, m := range s.Members {
			line("add %s %s", s.Name, m.Text)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.addMembers)) {
		for _, m := range d.addMembers[name] {
			line("add %s %s", name, m)
		}
	}
	for _, v := range d.newVirtuals {
		line("-A %s", ipvsadmService(v))
		for _, r := range v.Reals {
			line("-a %s -r %s -m -w %d", ipvsadmKey(v), r.Addr, r.Weight)
		}
	}
	for _, v := range d.setVirtuals {
		line("-E %s", ipvsadmService(v))
	}
	for _, k := range slices.Sorted(maps.Keys(d.addReals)) {
		for _, r := range d.addReals[k] {
			line("-a %s -r %s -m -w %d", keyFlag(k), r.Addr, r.Weight)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.setReals)) {
		for _, r := range d.setReals[k] {
			line("-e %s -r %s -m -w %d", keyFlag(k), r.Addr, r.Weight)
		}
	}
	for _, a := range d.addAddrs {
		line("ip addr add %s dev %s", a, Dummy)
	}
	if d.rulesPayload != "" {
		line("# %s --noflush", map[string]string{"IPv4": "iptables-restore", "IPv6": "ip6tables-restore"}[family])
		b.WriteString(d.rulesPayload)
	}
	for _, k := range slices.Sorted(maps.Keys(d.delReals)) {
		for _, r := range d.delReals[k] {
			line("-d %s -r %s", keyFlag(k), r.Addr)
		}
	}
	for _, v := range d.delVirtuals {
		line("-D %s", ipvsadmKey(v))
	}
	for _, a := range d.delAddrs {
		line("ip addr del %s dev %s", a, Dummy)
	}
	for _, name := range slices.Sorted(maps.Keys(d.delMembers)) {
		for _, m := range d.delMembers[name] {
			line("del %s %s", name, m)
		}
	}
	for _, s := range d.delSets {
		line("destroy %s", s.Name)
	}
	return b.String()
}

// createArgs are a set's ipset create arguments.
func createArgs(s *IPSet) string {
	x := s.Name + " " + s.Type
	if s.Family != "" {
		x += " family " + s.Family
	}
	for _, o := range s.Options {
		x += " " + o
	}
	return x
}

// ipvsadmKey is a virtual server as ipvsadm names it: -t 10.96.0.1:443.
func ipvsadmKey(v *Virtual) string { return keyFlag(v.Key()) }

// keyFlag turns a key ("TCP 10.96.0.1:443") into ipvsadm's option.
func keyFlag(key string) string {
	proto, addr, _ := strings.Cut(key, " ")
	flag := map[string]string{"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service"}[proto]
	return flag + " " + addr
}

// ipvsadmService is a virtual server with its scheduler and options, as
// ipvsadm-save -n writes it.
func ipvsadmService(v *Virtual) string {
	x := ipvsadmKey(v) + " -s " + v.Scheduler
	if len(v.SchedFlags) > 0 {
		x += " -b " + strings.Join(v.SchedFlags, ",")
	}
	if v.Persistent > 0 {
		x += fmt.Sprintf(" -p %d", v.Persistent)
	}
	return x
}
