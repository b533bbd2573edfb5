//go:build linux

package ipvs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// IPSetSource is the Origin of the ipsets read from the kernel.
const IPSetSource = "ipsets (netlink)"

// readIPSets lists every ipset over netlink and prints them as ipset save
// does. A kernel without ipset support has none (ErrNotInKernel).
func readIPSets() (snapshot.Dump, error) {
	failed := snapshot.Dump{Collector: snapshot.CollectorIPSet}
	res, err := netlink.IpsetListAll()
	if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.ENOENT) {
		return failed, fmt.Errorf("ipset is not in this kernel: %w", dataplane.ErrNotInKernel)
	}
	if err != nil {
		return failed, fmt.Errorf("listing ipsets over netlink: %w", err)
	}
	sets := &IPSets{Sets: map[string]*IPSet{}}
	for _, r := range res {
		set, err := setOf(r)
		if err != nil {
			return failed, err
		}
		sets.Sets[set.Name] = set
	}
	return snapshot.Dump{Collector: snapshot.CollectorIPSet, Origin: IPSetSource, Text: sets.Save()}, nil
}

// setOf is a set as the kernel lists it, with its members in ipset's
// notation.
func setOf(r netlink.IPSetResult) (*IPSet, error) {
	set := &IPSet{Name: r.SetName, Type: r.TypeName}
	switch r.Family {
	case syscall.AF_INET:
		set.Family = "inet"
	case syscall.AF_INET6:
		set.Family = "inet6"
	}
	if strings.HasPrefix(r.TypeName, "bitmap:port") {
		set.Options = []string{"range", fmt.Sprintf("%d-%d", r.PortFrom, r.PortTo)}
	} else {
		set.Options = []string{"hashsize", strconv.Itoa(int(r.HashSize)), "maxelem", strconv.Itoa(int(r.MaxElements))}
	}
	for _, e := range r.Entries {
		text, err := memberText(r.TypeName, e)
		if err != nil {
			return nil, fmt.Errorf("ipset %s: %w", r.SetName, err)
		}
		set.Members = append(set.Members, Member{Text: text})
	}
	return set, nil
}

// memberText writes an entry in ipset's notation for its set type.
func memberText(typ string, e netlink.IPSetEntry) (string, error) {
	dims := strings.Split(strings.TrimPrefix(strings.TrimPrefix(typ, "hash:"), "bitmap:"), ",")
	var parts []string
	ips := []net.IP{e.IP, e.IP2}
	cidrs := []uint8{e.CIDR, e.CIDR2}
	ipN := 0
	for _, d := range dims {
		switch d {
		case "ip", "net":
			if ipN >= len(ips) || ips[ipN] == nil {
				return "", fmt.Errorf("an entry of type %s without its address %d", typ, ipN+1)
			}
			a, ok := netip.AddrFromSlice(ips[ipN])
			if !ok {
				return "", fmt.Errorf("an entry of type %s with an unreadable address", typ)
			}
			text := a.Unmap().String()
			if c := cidrs[ipN]; d == "net" && c != 0 && int(c) != a.Unmap().BitLen() {
				text += "/" + strconv.Itoa(int(c))
			}
			parts = append(parts, text)
			ipN++
		case "port":
			if e.Port == nil {
				return "", fmt.Errorf("an entry of type %s without its port", typ)
			}
			if strings.HasPrefix(typ, "bitmap:") || e.Protocol == nil {
				parts = append(parts, strconv.Itoa(int(*e.Port)))
				continue
			}
			parts = append(parts, protoName(*e.Protocol)+":"+strconv.Itoa(int(*e.Port)))
		default:
			return "", fmt.Errorf("set type %s is not read by this svctrace", typ)
		}
	}
	return strings.Join(parts, ","), nil
}

// protoName is ipset's name for an IP protocol number.
func protoName(p uint8) string {
	switch p {
	case syscall.IPPROTO_TCP:
		return "tcp"
	case syscall.IPPROTO_UDP:
		return "udp"
	case syscall.IPPROTO_SCTP:
		return "sctp"
	case syscall.IPPROTO_UDPLITE:
		return "udplite"
	case syscall.IPPROTO_ICMP:
		return "icmp"
	case syscall.IPPROTO_ICMPV6:
		return "icmpv6"
	}
	return strconv.Itoa(int(p))
}
