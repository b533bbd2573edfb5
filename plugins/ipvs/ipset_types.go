package ipvs

import (
	"fmt"
	"strings"
)

// ipsetTypes lists the set types ipset (7.x) creates. A type the reader
// matches is in dims; the others (hash:mac, list:set, …) are a node's
// other sets, kept with a note. A type ipset has not is no node's: a
// dump cut inside its create line, or not ipset's.
func ipsetTypes() []string {
	return []string{
		"bitmap:ip", "bitmap:ip,mac", "bitmap:port",
		"hash:ip", "hash:mac", "hash:ip,mac", "hash:net", "hash:net,net",
		"hash:ip,port", "hash:net,port", "hash:ip,port,ip", "hash:ip,port,net",
		"hash:ip,mark", "hash:net,port,net", "hash:net,iface",
		"list:set",
	}
}

// checkSetType refuses a type that is no ipset type, naming what it may
// be the start of: a set whose type is not read matches nothing, and
// every Service it holds would look missing. A type made of ipset's
// words ("hash:net,port,mac") is taken, as one of a later ipset.
func checkSetType(set *IPSet, typ token, n int) error {
	var starts []string
	for _, t := range ipsetTypes() {
		if t == typ.s {
			return nil
		}
		if typ.s != "" && strings.HasPrefix(t, typ.s) {
			starts = append(starts, t)
		}
	}
	if len(starts) == 0 && ipsetWords(typ.s) {
		return nil
	}
	msg := fmt.Sprintf("set %s: type %q is not an ipset type", set.Name, typ.s)
	if len(starts) > 0 {
		msg += fmt.Sprintf(" (cut short? it starts %s)", strings.Join(starts, ", "))
	}
	return &ParseError{n, typ.col, msg + ": the dump is damaged, or not ipset's; capture it again with ipset save"}
}

// ipsetWords reports whether typ is made as ipset makes its types: a
// method, a colon, and dimensions, each a word ipset uses.
func ipsetWords(typ string) bool {
	method, dims, ok := strings.Cut(typ, ":")
	if !ok || method != "hash" && method != "bitmap" && method != "list" {
		return false
	}
	for _, d := range strings.Split(dims, ",") {
		switch d {
		case "ip", "net", "port", "mac", "mark", "iface", "set":
		default:
			return false
		}
	}
	return true
}
