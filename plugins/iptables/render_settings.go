package iptables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// SettingsInput is what RenderSettings are worked out from: kube-proxy's
// configuration as svctrace knows it, the node's addresses, and the
// layout the kernel holds now (for the facts only the kernel tells).
type SettingsInput struct {
	Family string
	Config snapshot.ProxyConfig
	// NodeIPs are the node's addresses of the family, primary first.
	NodeIPs []string
	// LocalAddrs are every address of the node's interfaces.
	LocalAddrs []string
	// PodCIDRs are the Node object's spec.podCIDRs (for NodeCIDR).
	PodCIDRs []string
	// Current is kube-proxy's part of the kernel's rules now (nil if
	// unknown).
	Current *Layout
}

// Settings works out the render settings. Notes say which were taken from
// the kernel's current rules and which were assumed for want of them.
func Settings(in SettingsInput) (RenderSettings, []string) {
	s := RenderSettings{Family: in.Family, MasqueradeBit: 14, MasqueradeAll: in.Config.MasqueradeAll, LocalhostNodePorts: true}
	var notes []string
	if in.Config.MasqueradeBit != nil {
		s.MasqueradeBit = *in.Config.MasqueradeBit
	}
	if in.Config.LocalhostNodePorts != nil {
		s.LocalhostNodePorts = *in.Config.LocalhostNodePorts
	}
	if len(in.NodeIPs) > 0 {
		s.NodeIP = in.NodeIPs[0]
	}
	s.Local = LocalDetector{Mode: in.Config.DetectLocalMode}
	switch in.Config.DetectLocalMode {
	case "", "ClusterCIDR":
		s.Local.CIDR = dataplane.CIDROfFamily(in.Config.ClusterCIDRs, in.Family)
	case "NodeCIDR":
		s.Local.CIDR = dataplane.CIDROfFamily(in.PodCIDRs, in.Family)
	case "BridgeInterface":
		s.Local.Interface = in.Config.BridgeInterface
	case "InterfaceNamePrefix":
		s.Local.Interface = in.Config.InterfaceNamePrefix
	}
	s.NodePortIPs = nodePortIPs(in)

	cur := in.Current
	if in.Config.Source != "configz" && cur != nil {
		notes = append(notes, inferNodePorts(&s, in, cur)...)
	}
	s.RandomFully, s.NFAcct, s.ConntrackLiberal = true, true, false
	if cur == nil || cur.Empty() {
		notes = append(notes, "kube-proxy's rules are absent: assumed MASQUERADE --random-fully, nfacct counters, and INVALID packets dropped, as kube-proxy has them on a current kernel")
		return s, notes
	}
	nat, filter := cur.Tables["nat"], cur.Tables["filter"]
	for _, x := range nat.Chains["KUBE-POSTROUTING"] {
		if ruleTarget(x) == "MASQUERADE" {
			s.RandomFully = strings.Contains(x, "--random-fully")
		}
	}
	fwd := filter.Chains["KUBE-FORWARD"]
	if len(fwd) > 0 {
		invalid := slices.IndexFunc(fwd, func(x string) bool { return strings.Contains(x, "--ctstate INVALID") })
		s.ConntrackLiberal = invalid < 0
		if invalid >= 0 {
			s.NFAcct = strings.Contains(fwd[invalid], "-m nfacct")
		}
	}
	if s.ConntrackLiberal || len(fwd) == 0 {
		// Only the localhost NodePort rules tell, where there are any.
		for _, x := range nat.Chains["KUBE-NODEPORTS"] {
			if strings.Contains(x, " -d 127.0.0.0/8 ") {
				s.NFAcct = strings.Contains(x, "-m nfacct")
			}
		}
	}
	return s, notes
}

// inferNodePorts reads --iptables-localhost-nodeports and
// --nodeport-addresses off the NodePort dispatch kube-proxy wrote last in
// nat KUBE-SERVICES, where its configuration does not tell them (its
// /configz did not answer): "! -d 127.0.0.0/8" there is localhost
// NodePorts turned off, and one rule per address is --nodeport-addresses.
func inferNodePorts(s *RenderSettings, in SettingsInput, cur *Layout) []string {
	var notes []string
	var ips []string
	localhostOff := false
	for _, x := range cur.Tables["nat"].Chains["KUBE-SERVICES"] {
		if ruleTarget(x) != "KUBE-NODEPORTS" {
			continue
		}
		if strings.Contains(x, " ! -d 127.0.0.0/8 ") {
			localhostOff = true
		}
		if f := strings.Fields(x); len(f) > 4 && f[2] == "-d" {
			ip, _, _ := strings.Cut(f[3], "/")
			ips = append(ips, ip)
		}
	}
	if in.Config.LocalhostNodePorts == nil && localhostOff && s.Family != "IPv6" {
		s.LocalhostNodePorts = false
		notes = append(notes, "localhost NodePorts off: read off nat KUBE-SERVICES' NodePort rule")
	}
	if len(in.Config.NodePortAddresses) == 0 && len(ips) > 0 {
		s.NodePortIPs = ips
		notes = append(notes, "NodePorts on "+strings.Join(ips, ", ")+" only: read off nat KUBE-SERVICES' NodePort rules")
	}
	return notes
}

// nodePortIPs are the addresses --nodeport-addresses selects, nil when it
// selects every local address.
func nodePortIPs(in SettingsInput) []string {
	if len(in.Config.NodePortAddresses) == 0 {
		return nil
	}
	var out []string
	for _, sel := range in.Config.NodePortAddresses {
		if sel == "primary" {
			out = append(out, in.NodeIPs...)
			continue
		}
		p, err := netip.ParsePrefix(sel)
		if err != nil {
			continue
		}
		if p.Bits() == 0 && p.Addr().Is4() == (in.Family != "IPv6") {
			return nil
		}
		for _, a := range in.LocalAddrs {
			if prefixHolds(p.String(), a) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// prefixHolds reports whether the CIDR holds the address.
func prefixHolds(cidr, addr string) bool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(addr)
	return err == nil && p.Contains(a)
}

// check refuses settings a rule could not hold as what they are: they
// come from kube-proxy's configuration and from the rules the kernel
// holds, and are written into the restore payload.
func (s RenderSettings) check() error {
	if s.MasqueradeBit < 0 || s.MasqueradeBit > 31 {
		return fmt.Errorf("masquerade bit %d is not a bit of a 32-bit mark", s.MasqueradeBit)
	}
	max := 15
	if s.Local.Mode == "InterfaceNamePrefix" {
		max = 14
	}
	if s.Local.Interface != "" && !ruleIface(s.Local.Interface, max) {
		return fmt.Errorf("local-traffic detector's interface %q is not an interface name a rule can hold", s.Local.Interface)
	}
	if s.Local.CIDR != "" {
		if _, err := netip.ParsePrefix(s.Local.CIDR); err != nil {
			return fmt.Errorf("local-traffic detector's CIDR %q: %w", s.Local.CIDR, err)
		}
	}
	return dataplane.CheckNodeAddrs(s.NodeIP, s.NodePortIPs)
}

// ruleIface reports whether an interface name (or prefix) is one a rule
// can hold as itself: 1 to max bytes (15; 14 for a prefix, to which
// iptables adds '+') of
// printable ASCII, none of them a blank, a quote, a backslash, '/', ':'
// or a wildcard, and not starting with '-' or '!'.
func ruleIface(name string, max int) bool {
	if name == "" || len(name) > max || name == "." || name == ".." || name[0] == '-' || name[0] == '!' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"'\\/:+*", c) >= 0 {
			return false
		}
	}
	return true
}
