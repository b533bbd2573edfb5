package iptables

// isKnownTarget reports whether t is a target extension or verdict (as
// opposed to a user-defined chain).
func isKnownTarget(t string) bool {
	switch t {
	case "ACCEPT", "DROP", "RETURN", "QUEUE", "NOTRACK", "TRACE",
		"LOG", "REJECT", "DNAT", "SNAT", "MASQUERADE", "REDIRECT", "MARK",
		"CONNMARK", "CT", "TPROXY", "NFLOG", "NFQUEUE", "TCPMSS", "CHECKSUM",
		"CLASSIFY", "DSCP":
		return true
	}
	return false
}

// knownTargetOption returns the canonical name and argument count of an
// option of a known target; ok is false for an option it does not have.
func knownTargetOption(target, opt string) (name string, nargs int, ok bool) {
	switch target {
	case "LOG":
		switch opt {
		case "log-prefix", "log-level":
			return opt, 1, true
		case "log-tcp-sequence", "log-tcp-options", "log-ip-options", "log-uid", "log-macdecode":
			return opt, 0, true
		}
	case "REJECT":
		return optArg1(opt, opt == "reject-with")
	case "DNAT":
		return tgtNatOption(opt, "to-destination")
	case "SNAT":
		return tgtNatOption(opt, "to-source")
	case "MASQUERADE", "REDIRECT":
		return tgtNatOption(opt, "to-ports")
	case "MARK":
		return optArg1(opt, opt == "set-xmark" || opt == "set-mark" || opt == "or-mark" ||
			opt == "and-mark" || opt == "xor-mark")
	case "CONNMARK":
		switch opt {
		case "set-xmark", "set-mark", "nfmask", "ctmask", "mask", "or-mark", "and-mark", "xor-mark":
			return opt, 1, true
		case "save-mark", "restore-mark":
			return opt, 0, true
		}
	case "CT":
		switch opt {
		case "notrack":
			return opt, 0, true
		case "zone", "zone-orig", "zone-reply", "helper", "ctevents", "expevents", "timeout":
			return opt, 1, true
		}
	case "TPROXY":
		return optArg1(opt, opt == "on-port" || opt == "on-ip" || opt == "tproxy-mark")
	case "NFLOG":
		return optArg1(opt, opt == "nflog-group" || opt == "nflog-prefix" || opt == "nflog-range" ||
			opt == "nflog-size" || opt == "nflog-threshold")
	case "NFQUEUE":
		switch opt {
		case "queue-num", "queue-balance":
			return opt, 1, true
		case "queue-bypass", "fail-open", "queue-cpu-fanout":
			return opt, 0, true
		}
	case "TCPMSS":
		switch opt {
		case "set-mss":
			return opt, 1, true
		case "clamp-mss-to-pmtu":
			return opt, 0, true
		}
	case "CHECKSUM":
		return optFlag(opt, opt == "checksum-fill")
	case "CLASSIFY":
		return optArg1(opt, opt == "set-class")
	case "DSCP":
		return optArg1(opt, opt == "set-dscp" || opt == "set-dscp-class")
	}
	return opt, 0, false
}

// tgtNatOption covers DNAT, SNAT, MASQUERADE and REDIRECT: one address or
// port option and the random / persistent flags.
func tgtNatOption(opt, to string) (string, int, bool) {
	switch opt {
	case to:
		return opt, 1, true
	case "random", "random-fully", "persistent":
		return opt, 0, true
	}
	return opt, 0, false
}
