package iptables

// The match modules the parser understands, as switch statements (no
// package-level tables). An option's nargs is the number of arguments it
// takes; -1 means one or more, up to the next option.

// knownMatchModule returns the canonical name of a match module and
// whether it is known.
func knownMatchModule(m string) (string, bool) {
	switch m {
	case "icmpv6", "ipv6-icmp":
		return "icmp6", true
	case "comment", "statistic", "recent", "addrtype", "conntrack", "state",
		"mark", "connmark", "nfacct", "tcp", "udp", "sctp", "multiport",
		"physdev", "set", "icmp", "icmp6", "limit", "mac", "owner", "pkttype",
		"iprange", "length", "ttl", "hl", "socket", "string", "rpfilter",
		"dscp", "connlimit", "helper", "cgroup", "udplite", "ipvs":
		return m, true
	}
	return m, false
}

// knownMatchOption returns the canonical name and argument count of an option
// of a known module; ok is false for an option the module does not have.
func knownMatchOption(module, opt string) (name string, nargs int, ok bool) {
	switch module {
	case "comment":
		return optArg1(opt, opt == "comment")
	case "statistic":
		return optArg1(opt, opt == "mode" || opt == "probability" || opt == "every" || opt == "packet")
	case "recent":
		return modRecentOption(opt)
	case "addrtype":
		return modAddrtypeOption(opt)
	case "conntrack":
		return modConntrackOption(opt)
	case "state":
		return optArg1(opt, opt == "state")
	case "ipvs":
		return modIPVSOption(opt)
	case "mark", "connmark":
		return optArg1(opt, opt == "mark")
	case "nfacct":
		return optArg1(opt, opt == "nfacct-name")
	case "tcp", "udp", "udplite", "sctp":
		return modPortOption(module, opt)
	case "multiport":
		return modMultiportOption(opt)
	case "physdev":
		return modPhysdevOption(opt)
	case "set":
		return modSetOption(opt)
	case "icmp":
		return optArg1(opt, opt == "icmp-type")
	case "icmp6":
		return optArg1(opt, opt == "icmpv6-type")
	case "limit":
		return optArg1(opt, opt == "limit" || opt == "limit-burst")
	case "mac":
		return optArg1(opt, opt == "mac-source")
	case "owner":
		return modOwnerOption(opt)
	case "pkttype":
		return optArg1(opt, opt == "pkt-type")
	case "iprange":
		return optArg1(opt, opt == "src-range" || opt == "dst-range")
	case "length":
		return optArg1(opt, opt == "length")
	case "ttl":
		return optArg1(opt, opt == "ttl-eq" || opt == "ttl-gt" || opt == "ttl-lt")
	case "hl":
		return optArg1(opt, opt == "hl-eq" || opt == "hl-gt" || opt == "hl-lt")
	case "socket":
		return optFlag(opt, opt == "transparent" || opt == "nowildcard" || opt == "restore-skmark")
	case "string":
		return modStringOption(opt)
	case "rpfilter":
		return optFlag(opt, opt == "loose" || opt == "validmark" || opt == "accept-local" || opt == "invert")
	case "dscp":
		return optArg1(opt, opt == "dscp" || opt == "dscp-class")
	case "connlimit":
		return modConnlimitOption(opt)
	case "helper":
		return optArg1(opt, opt == "helper")
	case "cgroup":
		return optArg1(opt, opt == "path" || opt == "cgroup")
	}
	return opt, 0, false
}

// modRecentOption is knownMatchOption for -m recent.
func modRecentOption(opt string) (string, int, bool) {
	switch opt {
	case "set", "rcheck", "update", "remove", "reap", "rttl", "rsource", "rdest":
		return opt, 0, true
	case "name", "seconds", "hitcount", "mask":
		return opt, 1, true
	}
	return opt, 0, false
}

// modAddrtypeOption is knownMatchOption for -m addrtype.
func modAddrtypeOption(opt string) (string, int, bool) {
	switch opt {
	case "src-type", "dst-type":
		return opt, 1, true
	case "limit-iface-in", "limit-iface-out":
		return opt, 0, true
	}
	return opt, 0, false
}

// modConntrackOption is knownMatchOption for -m conntrack.
func modConntrackOption(opt string) (string, int, bool) {
	switch opt {
	case "ctstate", "ctproto", "ctorigsrc", "ctorigdst", "ctreplsrc", "ctrepldst",
		"ctorigsrcport", "ctorigdstport", "ctreplsrcport", "ctrepldstport",
		"ctstatus", "ctexpire", "ctdir":
		return opt, 1, true
	}
	return opt, 0, false
}

// modIPVSOption is knownMatchOption for -m ipvs.
func modIPVSOption(opt string) (string, int, bool) {
	switch opt {
	case "ipvs":
		return opt, 0, true
	case "vproto", "vaddr", "vport", "vdir", "vmethod", "vportctl":
		return opt, 1, true
	}
	return opt, 0, false
}

// modMultiportOption is knownMatchOption for -m multiport: the long
// names of its options read as the short ones.
func modMultiportOption(opt string) (string, int, bool) {
	switch opt {
	case "dports", "destination-ports":
		return "dports", 1, true
	case "sports", "source-ports":
		return "sports", 1, true
	case "ports":
		return opt, 1, true
	}
	return opt, 0, false
}

// modPhysdevOption is knownMatchOption for -m physdev.
func modPhysdevOption(opt string) (string, int, bool) {
	switch opt {
	case "physdev-in", "physdev-out":
		return opt, 1, true
	case "physdev-is-in", "physdev-is-out", "physdev-is-bridged":
		return opt, 0, true
	}
	return opt, 0, false
}

// modSetOption is knownMatchOption for -m set.
func modSetOption(opt string) (string, int, bool) {
	switch opt {
	case "match-set":
		return opt, 2, true
	case "return-nomatch", "no-update-counters", "no-update-subcounters":
		return opt, 0, true
	}
	return opt, 0, false
}

// modStringOption is knownMatchOption for -m string.
func modStringOption(opt string) (string, int, bool) {
	switch opt {
	case "algo", "string", "hex-string", "from", "to":
		return opt, 1, true
	case "icase":
		return opt, 0, true
	}
	return opt, 0, false
}

// optArg1 is an option with one argument when ok.
func optArg1(opt string, ok bool) (string, int, bool) {
	if ok {
		return opt, 1, true
	}
	return opt, 0, false
}

// optFlag is an option without arguments when ok.
func optFlag(opt string, ok bool) (string, int, bool) { return opt, 0, ok }

// modPortOption covers tcp, udp, udplite and sctp.
func modPortOption(module, opt string) (string, int, bool) {
	switch opt {
	case "dport", "destination-port":
		return "dport", 1, true
	case "sport", "source-port":
		return "sport", 1, true
	}
	switch module {
	case "tcp":
		switch opt {
		case "tcp-flags":
			return opt, 2, true
		case "syn":
			return opt, 0, true
		case "tcp-option":
			return opt, 1, true
		}
	case "sctp":
		if opt == "chunk-types" {
			return opt, -1, true
		}
	}
	return opt, 0, false
}

func modOwnerOption(opt string) (string, int, bool) {
	switch opt {
	case "uid-owner", "gid-owner":
		return opt, 1, true
	case "socket-exists", "suppl-groups":
		return opt, 0, true
	}
	return opt, 0, false
}

func modConnlimitOption(opt string) (string, int, bool) {
	switch opt {
	case "connlimit-upto", "connlimit-above", "connlimit-mask":
		return opt, 1, true
	case "connlimit-saddr", "connlimit-daddr":
		return opt, 0, true
	}
	return opt, 0, false
}
