package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
)

// appendMatch appends " -m name" and the match's options as iptables-save
// prints them (libxt_<name>'s save), for the matches kube-proxy writes and
// a few more; any other, or a revision it does not read, is an error
// wrapping ErrNotTranslated.
func appendMatch(b []byte, fam *xtFamily, name string, rev byte, d []byte) ([]byte, error) {
	switch {
	case name == "comment" && rev == 0:
		if err := matchNeeds(name, rev, d, 256); err != nil {
			return nil, err
		}
		b = append(b, " -m comment --comment"...)
		return appendSaveString(b, cString(d[:255])), nil
	case (name == "tcp" || name == "udp") && rev == 0:
		return appendTCPUDP(b, name, rev, d)
	case name == "multiport" && rev == 1:
		return appendMultiport(b, d)
	case (name == "icmp" && fam.addrLen == 4 || name == "icmp6" && fam.addrLen == 16) && rev == 0:
		return appendICMP(b, name, d)
	case name == "limit" && rev == 0:
		return appendLimit(b, name, rev, d)
	case name == "pkttype" && rev == 0:
		return appendPktType(b, name, rev, d)
	case name == "sctp" && rev == 0:
		return appendSCTP(b, name, rev, d)
	case name == "mark" && rev == 1:
		if err := matchNeeds(name, rev, d, 9); err != nil {
			return nil, err
		}
		b = append(b, " -m mark"...)
		if d[8] != 0 {
			b = append(b, " !"...)
		}
		b = append(b, " --mark"...)
		return appendValMask(b, ne.Uint32(d[0:]), ne.Uint32(d[4:])), nil
	case name == "conntrack" && (rev == 2 || rev == 3):
		return appendConntrack(b, d, rev)
	case name == "statistic" && rev == 0:
		return appendStatistic(b, name, rev, d)
	case name == "recent" && rev == 1:
		return appendRecent(b, fam, d)
	case name == "addrtype" && rev == 1:
		return appendAddrType(b, name, rev, d)
	case name == "nfacct" && (rev == 0 || rev == 1):
		if err := matchNeeds(name, rev, d, 32); err != nil {
			return nil, err
		}
		b = append(b, " -m nfacct --nfacct-name "...)
		return appendSaveString(b, cString(d[:32])), nil
	}
	return matchNotRead(name, rev)
}

// appendPorts appends a port option ("--dport 80", "! --sport 1:2"),
// nothing for every port where skipAll.
func appendPorts(b []byte, opt string, lo, hi uint16, invert, skipAll bool) []byte {
	if skipAll && lo == 0 && hi == 0xffff && !invert {
		return b
	}
	if invert {
		b = append(b, " !"...)
	}
	b = append(b, ' ')
	b = append(b, opt...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(lo), 10)
	if lo != hi {
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(hi), 10)
	}
	return b
}

// appendValMask appends " 0xV" or " 0xV/0xM" (xtables_print_val_mask).
func appendValMask(b []byte, v, mask uint32) []byte {
	b = append(b, " 0x"...)
	b = strconv.AppendUint(b, uint64(v), 16)
	if mask != 0xffffffff {
		b = append(b, "/0x"...)
		b = strconv.AppendUint(b, uint64(mask), 16)
	}
	return b
}

// appendSaveString appends a string as xtables_save_string does: bare
// when it is letters, digits, '_' and '-' only, else quoted with '"', '\'
// and single quotes escaped.
func appendSaveString(b []byte, s string) []byte {
	bare := s != ""
	for i := 0; i < len(s) && bare; i++ {
		c := s[i]
		bare = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
	}
	b = append(b, ' ')
	if bare {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c == '\'' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// conntrack's match flags (xt_conntrack.h): state and protocol are read;
// addresses, ports, status, expiry and direction are not.
const (
	xtCtState      = 1 << 0
	xtCtProto      = 1 << 1
	xtCtStateAlias = 1 << 13
)

// ctStates are the state bits iptables-save prints, in its order.
var ctStates = []struct {
	bit  uint16
	name string
}{{1, "INVALID"}, {8, "NEW"}, {4, "RELATED"}, {2, "ESTABLISHED"}, {256, "UNTRACKED"}, {64, "SNAT"}, {128, "DNAT"}}

// appendConntrack appends a conntrack match (revisions 2 and 3 share the
// layout up to their state mask): "-m conntrack --ctstate NEW", or "-m
// state --state NEW" for a rule written with the state match's name.
func appendConntrack(b []byte, d []byte, rev byte) ([]byte, error) {
	if len(d) < 154 {
		return nil, fmt.Errorf("match conntrack revision %d: %d bytes of data, it has 154", rev, len(d))
	}
	l4, flags, inv, states := ne.Uint16(d[136:]), ne.Uint16(d[146:]), ne.Uint16(d[148:]), ne.Uint16(d[150:])
	if flags&^(xtCtState|xtCtProto|xtCtStateAlias) != 0 {
		return nil, fmt.Errorf("match conntrack with flags %#x: %w", flags, ErrNotTranslated)
	}
	opt := " --ctstate"
	if flags&xtCtStateAlias != 0 {
		b, opt = append(b, " -m state"...), " --state"
	} else {
		b = append(b, " -m conntrack"...)
	}
	if flags&xtCtState != 0 {
		if inv&xtCtState != 0 {
			b = append(b, " !"...)
		}
		b = append(b, opt...)
		sep := byte(' ')
		for _, s := range ctStates {
			if states&s.bit != 0 {
				b = append(b, sep)
				b = append(b, s.name...)
				sep = ','
			}
		}
	}
	if flags&xtCtProto != 0 {
		if inv&xtCtProto != 0 {
			b = append(b, " !"...)
		}
		b = append(b, " --ctproto "...)
		b = strconv.AppendUint(b, uint64(l4), 10)
	}
	return b, nil
}

// recent's check_set bits (xt_recent.h).
var recentFlags = []struct {
	bit byte
	opt string
}{{2, " --set"}, {1, " --rcheck"}, {4, " --update"}, {8, " --remove"}}

// appendRecent appends a recent match (revision 1, with its mask), as
// kube-proxy writes for ClientIP affinity.
func appendRecent(b []byte, fam *xtFamily, d []byte) ([]byte, error) {
	if len(d) < 228 {
		return nil, fmt.Errorf("match recent revision 1: %d bytes of data, it has 228", len(d))
	}
	seconds, hits, set, inv, side := ne.Uint32(d[0:]), ne.Uint32(d[4:]), d[8], d[9], d[210]
	b = append(b, " -m recent"...)
	if inv != 0 {
		b = append(b, " !"...)
	}
	for _, f := range recentFlags {
		if set&f.bit != 0 {
			b = append(b, f.opt...)
		}
	}
	if seconds != 0 {
		b = append(b, " --seconds "...)
		b = strconv.AppendUint(b, uint64(seconds), 10)
	}
	if set&0x20 != 0 {
		b = append(b, " --reap"...)
	}
	if hits != 0 {
		b = append(b, " --hitcount "...)
		b = strconv.AppendUint(b, uint64(hits), 10)
	}
	if set&0x10 != 0 {
		b = append(b, " --rttl"...)
	}
	b = append(b, " --name "...)
	b = append(b, cString(d[10:210])...)
	mask, _ := netip.AddrFromSlice(d[212 : 212+fam.addrLen])
	b = mask.AppendTo(append(b, " --mask "...))
	switch side {
	case 0:
		b = append(b, " --rsource"...)
	case 1:
		b = append(b, " --rdest"...)
	}
	return b, nil
}

// addrTypes are the address types by bit (xt_addrtype.h: rtn types).
var addrTypes = []string{"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"}

func appendAddrTypes(b []byte, mask uint16) []byte {
	sep := false
	for i, n := range addrTypes {
		if mask&(1<<i) != 0 {
			if sep {
				b = append(b, ',')
			}
			b = append(b, n...)
			sep = true
		}
	}
	return b
}
