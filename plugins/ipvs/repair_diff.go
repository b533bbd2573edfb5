package ipvs

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// State is kube-proxy's part of a node's ipvs mode for one family, as a
// repair compares it: the virtual servers of the family, the ipsets, the
// addresses on kube-ipvs0 and the iptables chains ipvs mode owns.
type State struct {
	Virtuals []*Virtual
	Sets     *IPSets
	Addrs    []netip.Prefix
	Rules    *iptables.Layout
}

// delta is what takes a State to a Target, as the operations that do it.
type delta struct {
	newSets []*IPSet
	// delSets are kube-proxy's sets the target has not (a backup taken
	// before a write made them), destroyed last.
	delSets    []*IPSet
	addMembers map[string][]string
	delMembers map[string][]string
	// newVirtuals come with their real servers; setVirtuals are changed
	// in place (scheduler, persistence); delVirtuals go with theirs.
	newVirtuals, setVirtuals, delVirtuals []*Virtual
	// addReals, setReals (weight or forwarding) and delReals by virtual
	// server key.
	addReals, setReals, delReals map[string][]Real
	addAddrs, delAddrs           []netip.Prefix
	// rules are the iptables changes, rulesPayload their restore input
	// and rulesTarget the layout they were made toward, whose ownership
	// (ipvs mode's) says which chains the payload may touch.
	rules        []dataplane.Change
	rulesPayload string
	rulesTarget  *iptables.Layout
	// notes say what differs that a repair leaves alone.
	notes []string
}

// diff compares the state with the target. With a Service, only that
// Service's virtual servers, set members and addresses are compared (the
// iptables rules of ipvs mode are no one Service's).
func diff(cur *State, t *Target, service string) *delta {
	d := &delta{addMembers: map[string][]string{}, delMembers: map[string][]string{},
		addReals: map[string][]Real{}, setReals: map[string][]Real{}, delReals: map[string][]Real{}}
	d.diffVirtuals(cur, t, service)
	d.diffSets(cur, t, service)
	d.diffAddrs(cur, t, service)
	return d
}

// inRepair says whether the object of key is in a repair of service ("":
// of every service).
func inRepair(t *Target, service, key string) bool {
	return service == "" || serviceName(t.owners[key]) == service
}

// diffVirtuals adds the virtual servers and their real servers to add,
// change and remove.
func (d *delta) diffVirtuals(cur *State, t *Target, service string) {
	have := map[string]*Virtual{}
	for _, v := range cur.Virtuals {
		if v.Protocol != "" {
			have[v.Key()] = v
		}
	}
	for _, v := range t.Virtuals {
		if !inRepair(t, service, v.Key()) {
			continue
		}
		old, ok := have[v.Key()]
		if !ok {
			d.newVirtuals = append(d.newVirtuals, v)
			continue
		}
		if old.String() != v.String() {
			d.setVirtuals = append(d.setVirtuals, v)
		}
		d.diffReals(old, v)
	}
	if service == "" {
		want := map[string]bool{}
		for _, v := range t.Virtuals {
			want[v.Key()] = true
		}
		for _, v := range cur.Virtuals {
			if v.Protocol != "" && !want[v.Key()] {
				d.delVirtuals = append(d.delVirtuals, v)
			}
		}
	}
}

// diffReals adds the real servers to add, change and remove to make old's
// those of v.
func (d *delta) diffReals(old, v *Virtual) {
	oldReals := map[netip.AddrPort]Real{}
	for _, r := range old.Reals {
		oldReals[r.Addr] = r
	}
	for _, r := range v.Reals {
		o, ok := oldReals[r.Addr]
		switch {
		case !ok:
			d.addReals[v.Key()] = append(d.addReals[v.Key()], r)
		case o.Weight != r.Weight || o.Forward != r.Forward:
			d.setReals[v.Key()] = append(d.setReals[v.Key()], r)
		}
		delete(oldReals, r.Addr)
	}
	for _, r := range old.Reals {
		if _, gone := oldReals[r.Addr]; gone {
			d.delReals[v.Key()] = append(d.delReals[v.Key()], r)
		}
	}
}

// diffSets adds the ipsets and members to add and remove.
func (d *delta) diffSets(cur *State, t *Target, service string) {
	for _, name := range slices.Sorted(maps.Keys(t.Sets)) {
		want := t.Sets[name]
		var old *IPSet
		if cur.Sets != nil {
			old = cur.Sets.Sets[name]
		}
		if old == nil {
			set := &IPSet{Name: want.Name, Type: want.Type, Family: want.Family, Options: want.Options}
			for _, m := range want.Members {
				if inRepair(t, service, name+" "+m.Text) {
					set.Members = append(set.Members, m)
				}
			}
			if service == "" || len(set.Members) > 0 {
				d.newSets = append(d.newSets, set)
			}
			continue
		}
		if old.Type != want.Type || old.family() != want.family() {
			d.notes = append(d.notes, "ipset "+name+" is "+old.Type+" "+old.family()+", but kube-proxy makes it "+want.Type+" "+want.family()+": a repair does not remake it (the iptables rules hold it)")
			continue
		}
		d.diffMembers(t, service, name, old, want)
	}

	if service == "" && cur.Sets != nil {
		for _, name := range sortedKeys(newSets(t.Family)) {
			if cur.Sets.Sets[name] != nil && t.Sets[name] == nil {
				d.delSets = append(d.delSets, cur.Sets.Sets[name])
			}
		}
	}
}

// diffMembers adds the members to add to, and remove from, ipset name to
// make old's those of want.
func (d *delta) diffMembers(t *Target, service, name string, old, want *IPSet) {
	oldSet := map[string]string{}
	for _, m := range old.Members {
		oldSet[canonMember(m.Text)] = m.Text
	}
	for _, m := range want.Members {
		c := canonMember(m.Text)
		if _, ok := oldSet[c]; !ok && inRepair(t, service, name+" "+m.Text) {
			d.addMembers[name] = append(d.addMembers[name], m.Text)
		}
		delete(oldSet, c)
	}
	if service == "" {
		for _, m := range old.Members {
			if _, stale := oldSet[canonMember(m.Text)]; stale {
				d.delMembers[name] = append(d.delMembers[name], m.Text)
			}
		}
	}
}

// diffAddrs adds the addresses to bind and unbind, and, for a repair of
// every service, the iptables rules to change.
func (d *delta) diffAddrs(cur *State, t *Target, service string) {
	haveAddr := map[netip.Addr]bool{}
	for _, a := range cur.Addrs {
		haveAddr[a.Addr()] = true
	}
	wantAddr := map[netip.Addr]bool{}
	for _, a := range t.Addrs {
		wantAddr[a.Addr()] = true
		if !haveAddr[a.Addr()] && inRepair(t, service, a.Addr().String()) {
			d.addAddrs = append(d.addAddrs, a)
		}
	}
	if service == "" {
		for _, a := range cur.Addrs {
			if !wantAddr[a.Addr()] {
				d.delAddrs = append(d.delAddrs, a)
			}
		}
		if cur.Rules != nil {
			d.rules, d.rulesPayload = iptables.LayoutDiff(cur.Rules, t.Rules)
			d.rulesTarget = t.Rules
		}
	}
}

// canonMember is a set member as compared: a host network ("/32",
// "/128") is its address.
func canonMember(m string) string {
	m = strings.TrimSuffix(m, "/32")
	return strings.TrimSuffix(m, "/128")
}

// serviceName is the Service ("ns/name") of a Service port name.
func serviceName(spn string) string {
	svc, _, _ := strings.Cut(spn, ":")
	return svc
}

// empty reports whether nothing differs.
func (d *delta) empty() bool {
	return len(d.newSets)+len(d.delSets)+len(d.addMembers)+len(d.delMembers)+len(d.newVirtuals)+len(d.setVirtuals)+len(d.delVirtuals)+
		len(d.addReals)+len(d.setReals)+len(d.delReals)+len(d.addAddrs)+len(d.delAddrs)+len(d.rules) == 0
}

// checkRules reads the iptables part of the write back with the iptables
// plane's parser before it is written (iptables.CheckPayload, with ipvs
// mode's ownership: its chains and its jumps to them), and refuses one
// that does anything but the delta's rule changes.
func (d *delta) checkRules() error {
	if d.rulesPayload == "" && len(d.rules) == 0 {
		return nil
	}
	if d.rulesTarget == nil {
		return errors.New("ipvs mode's iptables rules: the payload has no render to be checked against: refusing to write it")
	}
	if err := iptables.CheckPayload(d.rulesTarget, d.rules, d.rulesPayload, false); err != nil {
		return fmt.Errorf("ipvs mode's iptables rules: %w", err)
	}
	return nil
}
