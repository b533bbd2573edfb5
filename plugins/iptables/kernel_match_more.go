package iptables

import (
	"fmt"
	"strconv"
)

// The matches of other components' rules (firewalls, kubelets, CNIs)
// beside kube-proxy's: TCP flags and options, multiport, ICMP, limit,
// pkttype, printed as their save functions do.

// appendTCPOptions appends the tcp match's --tcp-option and --tcp-flags
// (--syn is saved as the flags it stands for).
func appendTCPOptions(b []byte, option, mask, cmp, inv byte) ([]byte, error) {
	if option != 0 || inv&0x08 != 0 {
		if inv&0x08 != 0 {
			b = append(b, " !"...)
		}
		b = strconv.AppendUint(append(b, " --tcp-option "...), uint64(option), 10)
	}
	if mask != 0 || inv&0x04 != 0 {
		if (mask|cmp)&^0x3f != 0 {
			// ECE, CWR: iptables-save prints no name for them.
			return nil, fmt.Errorf("match tcp with flags %#x/%#x: %w", mask, cmp, ErrNotTranslated)
		}
		if inv&0x04 != 0 {
			b = append(b, " !"...)
		}
		b = appendTCPFlags(append(b, " --tcp-flags "...), mask)
		b = appendTCPFlags(append(b, ' '), cmp)
	}
	return b, nil
}

// tcpFlags are the TCP flags by bit, as iptables-save names them.
var tcpFlags = []string{"FIN", "SYN", "RST", "PSH", "ACK", "URG"}

// appendTCPFlags appends a --tcp-flags set: the names of its bits, in
// order, or NONE.
func appendTCPFlags(b []byte, flags byte) []byte {
	if flags == 0 {
		return append(b, "NONE"...)
	}
	sep := false
	for i, n := range tcpFlags {
		if flags&(1<<i) != 0 {
			if sep {
				b = append(b, ',')
			}
			b, sep = append(b, n...), true
		}
	}
	return b
}

// appendMultiport appends a multiport match (revision 1: flags, count,
// ports[15], pflags[15] marking a range's start, invert).
func appendMultiport(b []byte, d []byte) ([]byte, error) {
	if len(d) < 48 {
		return nil, fmt.Errorf("match multiport revision 1: %d bytes of data, it has 48", len(d))
	}
	n := int(d[1])
	if n > 15 || d[0] > 2 {
		return nil, fmt.Errorf("match multiport: %d ports, flags %d", n, d[0])
	}
	b = append(b, " -m multiport"...)
	if d[47] != 0 {
		b = append(b, " !"...)
	}
	b = append(b, [...]string{" --sports ", " --dports ", " --ports "}[d[0]]...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(ne.Uint16(d[2+2*i:])), 10)
		if d[32+i] != 0 && i+1 < n {
			i++
			b = strconv.AppendUint(append(b, ':'), uint64(ne.Uint16(d[2+2*i:])), 10)
		}
	}
	return b, nil
}

// appendICMP appends an icmp or icmp6 match (type, code range, invflags).
func appendICMP(b []byte, name string, d []byte) ([]byte, error) {
	if len(d) < 4 {
		return nil, fmt.Errorf("match %s: %d bytes of data, it has 4", name, len(d))
	}
	typ, lo, hi := d[0], d[1], d[2]
	b = append(b, " -m "...)
	b = append(b, name...)
	if d[3]&0x01 != 0 {
		b = append(b, " !"...)
	}
	if name == "icmp" && typ == 0xff && lo == 0 && hi == 0xff {
		return append(b, " --icmp-type any"...), nil
	}
	if name == "icmp" {
		b = append(b, " --icmp-type "...)
	} else {
		b = append(b, " --icmpv6-type "...)
	}
	b = strconv.AppendUint(b, uint64(typ), 10)
	if lo != 0 || hi != 0xff {
		b = strconv.AppendUint(append(b, '/'), uint64(lo), 10)
	}
	return b, nil
}

// rateUnits are limit's units, longest first, in its scale (10,000 per
// second).
var rateUnits = []struct {
	name string
	mult uint32
}{{"day", 10000 * 24 * 60 * 60}, {"hour", 10000 * 60 * 60}, {"min", 10000 * 60}, {"sec", 10000}}

// appendRate appends a limit's rate as its save does: " N/unit", in the
// longest unit that holds it well.
func appendRate(b []byte, period uint32) []byte {
	i := 1
	for ; i < len(rateUnits); i++ {
		m := rateUnits[i].mult
		if period > m || m/period < m%period {
			break
		}
	}
	u := rateUnits[i-1]
	b = strconv.AppendUint(append(b, ' '), uint64(u.mult/period), 10)
	return append(append(b, '/'), u.name...)
}

// pktTypes are the packet types by number (PACKET_HOST ...), as
// iptables-save names them.
var pktTypes = []string{"unicast", "broadcast", "multicast", "otherhost"}
