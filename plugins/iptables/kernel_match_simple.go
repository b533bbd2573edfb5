package iptables

import (
	"fmt"
	"strconv"
)

// matchNeeds checks that match name revision rev has n bytes of data.
func matchNeeds(name string, rev byte, d []byte, n int) error {
	if len(d) < n {
		return fmt.Errorf("match %s revision %d: %d bytes of data, it has %d", name, rev, len(d), n)
	}
	return nil
}

// matchNotRead is the error for a match the reader does not print.
func matchNotRead(name string, rev byte) ([]byte, error) {
	return nil, fmt.Errorf("match %s revision %d: %w", name, rev, ErrNotTranslated)
}

// appendTCPUDP appends a tcp or udp match (revision 0): ports, and tcp's
// options.
func appendTCPUDP(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	if err := matchNeeds(name, rev, d, 9); err != nil {
		return nil, err
	}
	b = append(b, " -m "...)
	b = append(b, name...)
	inv := d[8]
	if name == "tcp" {
		if err := matchNeeds(name, rev, d, 12); err != nil {
			return nil, err
		}
		inv = d[11]
	}
	b = appendPorts(b, "--sport", ne.Uint16(d[0:]), ne.Uint16(d[2:]), inv&0x01 != 0, true)
	b = appendPorts(b, "--dport", ne.Uint16(d[4:]), ne.Uint16(d[6:]), inv&0x02 != 0, true)
	if name == "udp" {
		return b, nil
	}
	return appendTCPOptions(b, d[8], d[9], d[10], inv)
}

// appendLimit appends a limit match (revision 0).
func appendLimit(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	// avg, burst (the rest is the kernel's)
	if err := matchNeeds(name, rev, d, 8); err != nil {
		return nil, err
	}
	avg, burst := ne.Uint32(d[0:]), ne.Uint32(d[4:])
	if avg == 0 {
		return matchNotRead(name, rev)
	}
	b = appendRate(append(b, " -m limit --limit"...), avg)
	if burst != 5 {
		b = strconv.AppendUint(append(b, " --limit-burst "...), uint64(burst), 10)
	}
	return b, nil
}

// appendPktType appends a pkttype match (revision 0).
func appendPktType(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	// pkttype, invert (ints)
	if err := matchNeeds(name, rev, d, 8); err != nil {
		return nil, err
	}
	b = append(b, " -m pkttype"...)
	if ne.Uint32(d[4:]) != 0 {
		b = append(b, " !"...)
	}
	b = append(b, " --pkt-type "...)
	if t := int32(ne.Uint32(d[0:])); t >= 0 && t < int32(len(pktTypes)) {
		return append(b, pktTypes[t]...), nil
	} else {
		return strconv.AppendInt(b, int64(t), 10), nil
	}
}

// appendSCTP appends an sctp match (revision 0) of ports alone.
func appendSCTP(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	// dpts, spts, chunkmap[64], chunk_match_type, flag_info[4],
	// flag_count, flags, invflags
	if err := matchNeeds(name, rev, d, 292); err != nil {
		return nil, err
	}
	flags, inv := ne.Uint32(d[284:]), ne.Uint32(d[288:])
	if flags&^0x03 != 0 {
		return matchNotRead(name, rev) // --chunk-types
	}
	b = append(b, " -m sctp"...)
	if flags&0x01 != 0 {
		b = appendPorts(b, "--sport", ne.Uint16(d[4:]), ne.Uint16(d[6:]), inv&0x01 != 0, false)
	}
	if flags&0x02 != 0 {
		b = appendPorts(b, "--dport", ne.Uint16(d[0:]), ne.Uint16(d[2:]), inv&0x02 != 0, false)
	}
	return b, nil
}

// appendStatistic appends a statistic match (revision 0) in random or nth
// mode.
func appendStatistic(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	if err := matchNeeds(name, rev, d, 16); err != nil {
		return nil, err
	}
	mode, flags := ne.Uint16(d[0:]), ne.Uint16(d[2:])
	b = append(b, " -m statistic --mode "...)
	switch mode {
	case 0:
		b = append(b, "random"...)
		if flags&1 != 0 {
			b = append(b, " !"...)
		}
		b = append(b, " --probability "...)
		return strconv.AppendFloat(b, float64(ne.Uint32(d[4:]))/0x80000000, 'f', 11, 64), nil
	case 1:
		b = append(b, "nth"...)
		if flags&1 != 0 {
			b = append(b, " !"...)
		}
		b = append(b, " --every "...)
		b = strconv.AppendUint(b, uint64(ne.Uint32(d[4:]))+1, 10)
		b = append(b, " --packet "...)
		return strconv.AppendUint(b, uint64(ne.Uint32(d[8:])), 10), nil
	}
	return matchNotRead(name, rev)
}

// appendAddrType appends an addrtype match (revision 1).
func appendAddrType(b []byte, name string, rev byte, d []byte) ([]byte, error) {
	if err := matchNeeds(name, rev, d, 8); err != nil {
		return nil, err
	}
	src, dst, flags := ne.Uint16(d[0:]), ne.Uint16(d[2:]), ne.Uint32(d[4:])
	b = append(b, " -m addrtype"...)
	if src != 0 {
		if flags&0x01 != 0 {
			b = append(b, " !"...)
		}
		b = appendAddrTypes(append(b, " --src-type "...), src)
	}
	if dst != 0 {
		if flags&0x02 != 0 {
			b = append(b, " !"...)
		}
		b = appendAddrTypes(append(b, " --dst-type "...), dst)
	}
	if flags&0x04 != 0 {
		b = append(b, " --limit-iface-in"...)
	}
	if flags&0x08 != 0 {
		b = append(b, " --limit-iface-out"...)
	}
	return b, nil
}
