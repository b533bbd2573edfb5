package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
)

// appendTarget appends a target's options as iptables-save prints them
// (libxt_<NAME>'s save), for the targets kube-proxy writes and a few more;
// any other is an error wrapping ErrNotTranslated.
func appendTarget(b []byte, fam *xtFamily, name string, rev byte, d []byte) ([]byte, error) {
	need := func(n int) error {
		if len(d) < n {
			return fmt.Errorf("target %s revision %d: %d bytes of data, it has %d", name, rev, len(d), n)
		}
		return nil
	}
	v4 := fam.addrLen == 4
	switch {
	case name == "MARK" && rev == 2:
		if err := need(8); err != nil {
			return nil, err
		}
		b = append(b, " --set-xmark 0x"...)
		b = strconv.AppendUint(b, uint64(ne.Uint32(d[0:])), 16)
		b = append(b, "/0x"...)
		return strconv.AppendUint(b, uint64(ne.Uint32(d[4:])), 16), nil
	case name == "REJECT" && rev == 0:
		if err := need(4); err != nil {
			return nil, err
		}
		names := rejectV4
		if !v4 {
			names = rejectV6
		}
		w := ne.Uint32(d)
		if int(w) >= len(names) || names[w] == "" {
			return nil, fmt.Errorf("target REJECT with %d: %w", w, ErrNotTranslated)
		}
		b = append(b, " --reject-with "...)
		return append(b, names[w]...), nil
	case name == "LOG" && rev == 0:
		// level, logflags, prefix[30]
		if err := need(32); err != nil {
			return nil, err
		}
		if d[1]&^0x2f != 0 {
			return nil, fmt.Errorf("target LOG with flags %#x: %w", d[1], ErrNotTranslated)
		}
		if prefix := cString(d[2:32]); prefix != "" {
			b = appendSaveString(append(b, " --log-prefix"...), prefix)
		}
		if level := d[0]; level != 4 {
			b = strconv.AppendUint(append(b, " --log-level "...), uint64(level), 10)
		}
		for _, f := range logFlags {
			if d[1]&f.bit != 0 {
				b = append(b, f.opt...)
			}
		}
		return b, nil
	case name == "DNAT" || name == "SNAT" || name == "MASQUERADE" || name == "REDIRECT":
		r, err := natRange(fam, name, rev, d)
		if err != nil {
			return nil, err
		}
		return r.append(b, name, v4), nil
	}
	return nil, fmt.Errorf("target %s revision %d: %w", name, rev, ErrNotTranslated)
}

// LOG's flags (xt_LOG.h), in the order its save prints them.
var logFlags = []struct {
	bit byte
	opt string
}{{0x01, " --log-tcp-sequence"}, {0x02, " --log-tcp-options"}, {0x04, " --log-ip-options"}, {0x08, " --log-uid"}, {0x20, " --log-macdecode"}}

// REJECT's answers by number (ipt_REJECT.h, ip6t_REJECT.h).
var (
	rejectV4 = []string{"icmp-net-unreachable", "icmp-host-unreachable", "icmp-proto-unreachable", "icmp-port-unreachable",
		"echo-reply", "icmp-net-prohibited", "icmp-host-prohibited", "tcp-reset", "icmp-admin-prohibited"}
	rejectV6 = []string{"icmp6-no-route", "icmp6-adm-prohibited", "icmp6-not-neighbor", "icmp6-addr-unreachable",
		"icmp6-port-unreachable", "", "tcp-reset", "icmp6-policy-fail", "icmp6-reject-route"}
)

// NAT range flags (nf_nat.h).
const (
	natMapIPs         = 1 << 0
	natProtoSpecified = 1 << 1
	natRandom         = 1 << 2
	natPersistent     = 1 << 3
	natRandomFully    = 1 << 4
	natProtoOffset    = 1 << 5
	natNetmap         = 1 << 6
)

// natRangeOf is a NAT target's range, whatever its revision's layout.
type natRangeOf struct {
	flags            uint32
	minAddr, maxAddr netip.Addr
	minPort, maxPort uint16
}

// natRange reads a NAT target's range: the IPv4 compat layout (revision
// 0: a count and one range), nf_nat_range (IPv6 revision 1, and IPv6
// MASQUERADE and REDIRECT at 0) and nf_nat_range2 (DNAT revision 2).
func natRange(fam *xtFamily, name string, rev byte, d []byte) (natRangeOf, error) {
	var r natRangeOf
	short := func(n int) error {
		return fmt.Errorf("target %s revision %d: %d bytes of data, it has %d", name, rev, len(d), n)
	}
	compat := fam.addrLen == 4 && rev == 0
	switch {
	case compat:
		if len(d) < 20 {
			return r, short(20)
		}
		if n := ne.Uint32(d); n != 1 {
			return r, fmt.Errorf("target %s with %d ranges: %w", name, n, ErrNotTranslated)
		}
		r.flags = ne.Uint32(d[4:])
		r.minAddr, _ = netip.AddrFromSlice(d[8:12])
		r.maxAddr, _ = netip.AddrFromSlice(d[12:16])
		r.minPort, r.maxPort = be16(d[16:]), be16(d[18:])
	case rev == 2 && name == "DNAT", fam.addrLen == 16 && (rev == 1 || (rev == 0 && (name == "MASQUERADE" || name == "REDIRECT"))):
		if len(d) < 40 {
			return r, short(40)
		}
		r.flags = ne.Uint32(d)
		r.minAddr, _ = netip.AddrFromSlice(d[4 : 4+fam.addrLen])
		r.maxAddr, _ = netip.AddrFromSlice(d[20 : 20+fam.addrLen])
		r.minPort, r.maxPort = be16(d[36:]), be16(d[38:])
	default:
		return r, fmt.Errorf("target %s revision %d: %w", name, rev, ErrNotTranslated)
	}
	if r.flags&(natProtoOffset|natNetmap) != 0 {
		return r, fmt.Errorf("target %s with flags %#x: %w", name, r.flags, ErrNotTranslated)
	}
	return r, nil
}

// append appends the range's options as libxt_NAT saves them:
// "--to-destination a[-b][:p[-q]]" (DNAT), "--to-source" (SNAT),
// "--to-ports p[-q]" (MASQUERADE, REDIRECT), then the flags.
func (r natRangeOf) append(b []byte, name string, v4 bool) []byte {
	opt, portsOnly := " --to-destination ", false
	switch name {
	case "SNAT":
		opt = " --to-source "
	case "MASQUERADE", "REDIRECT":
		opt, portsOnly = " --to-ports ", true
	}
	var s []byte
	if r.flags&natMapIPs != 0 {
		brackets := !v4 && r.flags&natProtoSpecified != 0
		if brackets {
			s = append(s, '[')
		}
		s = r.minAddr.AppendTo(s)
		if r.maxAddr != r.minAddr {
			s = r.maxAddr.AppendTo(append(s, '-'))
		}
		if brackets {
			s = append(s, ']')
		}
	}
	if r.flags&natProtoSpecified != 0 {
		if len(s) > 0 || !portsOnly {
			s = append(s, ':')
		}
		s = strconv.AppendUint(s, uint64(r.minPort), 10)
		if r.maxPort != r.minPort {
			s = strconv.AppendUint(append(s, '-'), uint64(r.maxPort), 10)
		}
	}
	if len(s) > 0 {
		b = append(append(b, opt...), s...)
	}
	if r.flags&natRandom != 0 {
		b = append(b, " --random"...)
	}
	if r.flags&natRandomFully != 0 {
		b = append(b, " --random-fully"...)
	}
	if r.flags&natPersistent != 0 {
		b = append(b, " --persistent"...)
	}
	return b
}

// be16 is a port in network order.
func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }
