//go:build linux

package ipvs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	mobyipvs "github.com/moby/ipvs"
	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// applyDelta makes a delta's changes in the kernel of the calling
// thread's network namespace, over netlink: the ipsets and their members
// first, then the virtual and real servers, kube-ipvs0's addresses, the
// iptables rules (iptables-restore --noflush), and last what is removed,
// so that a packet meets the new rules before the old ones go. Each
// operation is the kernel's own (an entry is added or not); the write as
// a whole runs in a process of its own, which a stopped svctrace does not
// cut short (see Write).
func applyDelta(ctx context.Context, d *delta, family, backend string) error {
	return applyDeltaWith(ctx, ipvsnetlink.Kernel{}, d, family, backend)
}

// applyDeltaWith makes the changes with the ipsets and kube-ipvs0 written
// over netlink sockets of k (the virtual servers are
// github.com/moby/ipvs's to write, in the calling thread's namespace).
func applyDeltaWith(ctx context.Context, k ipvsnetlink.Dialer, d *delta, family, backend string) error {
	// Nothing is written unless the iptables part reads back as the
	// delta's own rule changes.
	if err := d.checkRules(); err != nil {
		return err
	}
	nf, err := ipvsnetlink.Open(k, ipvsnetlink.ProtoNetfilter)
	if err != nil {
		return err
	}
	defer nf.Close()
	rt, err := ipvsnetlink.Open(k, ipvsnetlink.ProtoRoute)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := addSets(nf, d); err != nil {
		return err
	}
	h, err := ipvsHandle(d)
	if err != nil {
		return err
	}
	if h != nil {
		defer h.Close()
	}
	if err := addServers(h, d); err != nil {
		return err
	}
	if err := bindAddrs(rt, d); err != nil {
		return err
	}
	if d.rulesPayload != "" {
		if err := iptables.RestoreKernel(ctx, backend, family, d.rulesPayload, nil); err != nil {
			return err
		}
	}
	if err := removeServers(h, d); err != nil {
		return err
	}
	if err := unbindAddrs(rt, d); err != nil {
		return err
	}
	return removeSets(nf, d)
}

// addSets creates a delta's new ipsets and adds its members.
func addSets(c *ipvsnetlink.Conn, d *delta) error {
	for _, s := range d.newSets {
		if err := createSet(c, s); err != nil {
			return err
		}
		for _, m := range s.Members {
			if err := setMember(c, s, m.Text, true); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(d.addMembers) {
		for _, m := range d.addMembers[name] {
			if err := setMember(c, &IPSet{Name: name, Type: typeOfSet(name)}, m, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// addServers adds and changes a delta's virtual and real servers.
func addServers(h *mobyipvs.Handle, d *delta) error {
	for _, v := range d.newVirtuals {
		svc := service(v)
		if err := h.NewService(svc); err != nil {
			return fmt.Errorf("adding IPVS virtual server %s: %w", v.Key(), err)
		}
		for _, r := range v.Reals {
			if err := h.NewDestination(svc, destination(r)); err != nil {
				return fmt.Errorf("adding real server %s to %s: %w", r.Addr, v.Key(), err)
			}
		}
	}
	for _, v := range d.setVirtuals {
		if err := h.UpdateService(service(v)); err != nil {
			return fmt.Errorf("changing IPVS virtual server %s: %w", v.Key(), err)
		}
	}
	for _, k := range sortedKeys(d.addReals) {
		for _, r := range d.addReals[k] {
			if err := h.NewDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("adding real server %s to %s: %w", r.Addr, k, err)
			}
		}
	}
	for _, k := range sortedKeys(d.setReals) {
		for _, r := range d.setReals[k] {
			if err := h.UpdateDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("changing real server %s of %s: %w", r.Addr, k, err)
			}
		}
	}
	return nil
}

// bindAddrs makes kube-ipvs0 when the delta binds or unbinds addresses,
// and binds the delta's new ones.
func bindAddrs(c *ipvsnetlink.Conn, d *delta) error {
	if len(d.addAddrs)+len(d.delAddrs) > 0 {
		index, err := ensureDummy(c)
		if err != nil {
			return err
		}
		for _, a := range d.addAddrs {
			if err := c.Addr(true, index, a); err != nil && !errors.Is(err, syscall.EEXIST) {
				return fmt.Errorf("binding %s on %s: %w", a, Dummy, err)
			}
		}
	}
	return nil
}

// removeServers removes a delta's stale real and virtual servers.
func removeServers(h *mobyipvs.Handle, d *delta) error {
	for _, k := range sortedKeys(d.delReals) {
		for _, r := range d.delReals[k] {
			if err := h.DelDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("removing real server %s of %s: %w", r.Addr, k, err)
			}
		}
	}
	for _, v := range d.delVirtuals {
		if err := h.DelService(service(v)); err != nil {
			return fmt.Errorf("removing IPVS virtual server %s: %w", v.Key(), err)
		}
	}
	return nil
}

// unbindAddrs unbinds a delta's stale addresses from kube-ipvs0.
func unbindAddrs(c *ipvsnetlink.Conn, d *delta) error {
	if len(d.delAddrs) > 0 {
		index, err := c.LinkIndex(Dummy)
		if err != nil {
			return err
		}
		for _, a := range d.delAddrs {
			if err := c.Addr(false, index, a); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
				return fmt.Errorf("unbinding %s from %s: %w", a, Dummy, err)
			}
		}
	}
	return nil
}

// removeSets removes a delta's stale members and ipsets.
func removeSets(c *ipvsnetlink.Conn, d *delta) error {
	for _, name := range sortedKeys(d.delMembers) {
		for _, m := range d.delMembers[name] {
			if err := setMember(c, &IPSet{Name: name, Type: typeOfSet(name)}, m, false); err != nil {
				return err
			}
		}
	}
	for _, s := range d.delSets {
		if err := destroySet(c, s.Name); err != nil {
			return err
		}
	}
	return nil
}

// ipvsHandle opens IPVS over netlink when the delta changes virtual or
// real servers (nil when it does not: a kernel without IPVS can still
// have its ipsets and addresses written).
func ipvsHandle(d *delta) (*mobyipvs.Handle, error) {
	if len(d.newVirtuals)+len(d.setVirtuals)+len(d.delVirtuals)+len(d.addReals)+len(d.setReals)+len(d.delReals) == 0 {
		return nil, nil
	}
	h, err := mobyipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("opening IPVS over netlink: %w", err)
	}
	return h, nil
}

// ensureDummy is the index of kube-ipvs0, made as kube-proxy makes it
// (a dummy interface) when it is missing.
func ensureDummy(c *ipvsnetlink.Conn) (int, error) {
	index, err := c.LinkIndex(Dummy)
	if !errors.Is(err, ipvsnetlink.ErrNoLink) {
		return index, err
	}
	if err := c.AddLink(Dummy, "dummy"); err != nil && !errors.Is(err, syscall.EEXIST) {
		return 0, fmt.Errorf("creating %s: %w", Dummy, err)
	}
	return c.LinkIndex(Dummy)
}

// service is a virtual server as IPVS takes it, with the flags and
// netmask kube-proxy gives it.
func service(v *Virtual) *mobyipvs.Service {
	s := keyService(v.Key())
	s.SchedName = v.Scheduler
	if v.Persistent > 0 {
		s.Flags |= svcPersistentFlag
		s.Timeout = uint32(v.Persistent)
	}
	names, ok := schedFlagNames[v.Scheduler]
	if !ok {
		names = [3]string{"flag-1", "flag-2", "flag-3"}
	}
	for i, f := range []uint32{svcSched1Flag, svcSched2Flag, svcSched3Flag} {
		if slices.Contains(v.SchedFlags, names[i]) {
			s.Flags |= f
		}
	}
	if v.OnePacket {
		s.Flags |= svcOnePacketFlag
	}
	return s
}

// keyService is the virtual server of a key ("TCP 10.96.0.1:443"), which
// names it to IPVS.
func keyService(key string) *mobyipvs.Service {
	proto, ap, _ := strings.Cut(key, " ")
	a := netip.MustParseAddrPort(ap)
	s := &mobyipvs.Service{Address: a.Addr().AsSlice(), Port: a.Port(),
		Protocol: map[string]uint16{"TCP": unix.IPPROTO_TCP, "UDP": unix.IPPROTO_UDP, "SCTP": unix.IPPROTO_SCTP}[proto]}
	if a.Addr().Is4() {
		s.AddressFamily, s.Netmask = unix.AF_INET, 0xffffffff
	} else {
		s.AddressFamily, s.Netmask = unix.AF_INET6, 128
	}
	return s
}

// destination is a real server, masqueraded as kube-proxy has it.
func destination(r Real) *mobyipvs.Destination {
	d := &mobyipvs.Destination{Address: r.Addr.Addr().AsSlice(), Port: r.Addr.Port(), Weight: r.Weight, AddressFamily: unix.AF_INET}
	if r.Addr.Addr().Is6() {
		d.AddressFamily = unix.AF_INET6
	}
	for bits, name := range forwardNames {
		if name == r.Forward {
			d.ConnectionFlags = bits
		}
	}
	return d
}
