// Package ipvs is the data plane of kube-proxy's ipvs mode: the kernel's
// IPVS table of virtual and real servers. It reads that table from
// ipvsadm's listing (ipvsadm -Ln) or its save form (ipvsadm-save -n) and
// walks a packet through it: which real servers a new connection to a
// virtual server can reach, with what share, under which scheduler and
// persistence.
package ipvs

import (
	"fmt"
	"net/netip"
	"strings"
)

// Table is the IPVS table of one node: its virtual servers in the order
// the dump lists them.
type Table struct {
	Virtuals []*Virtual
	// Notes say what the dump held that the reader did not understand
	// (kept, not guessed at).
	Notes []string
	// hidden counts the virtual servers left out because their address
	// was redacted (see redact.go).
	hidden int
}

// Virtual is one virtual server.
type Virtual struct {
	// Protocol is TCP, UDP or SCTP; empty for a firewall-mark service.
	Protocol string
	Addr     netip.AddrPort
	FWMark   uint32
	// Scheduler is rr, wrr, lc, sh, mh, …; SchedFlags its flags
	// (sh-fallback, sh-port, mh-fallback, mh-port, flag-1…).
	Scheduler  string
	SchedFlags []string
	// Persistent is the persistence timeout in seconds (0: none), which
	// kube-proxy sets for ClientIP session affinity; Netmask groups the
	// clients it applies to.
	Persistent int32
	Netmask    string
	// OnePacket is the ops flag (one-packet scheduling, UDP).
	OnePacket bool
	Reals     []Real
	// Line is where the dump lists it (1-based).
	Line int
}

// Real is one real server of a virtual server.
type Real struct {
	Addr netip.AddrPort
	// Forward is Masq (NAT, what kube-proxy uses), Route (direct
	// routing), Tunnel (IP-in-IP) or Local.
	Forward               string
	Weight                int
	ActiveConn, InActConn int
	Line                  int
	// Redacted: the dump's author hid its address (Addr is not valid).
	Redacted bool
}

// Key is the virtual server's name as ipvsadm prints it:
// "TCP 10.96.0.1:443" or "FWM 7".
func (v *Virtual) Key() string {
	if v.Protocol == "" {
		return fmt.Sprintf("FWM %d", v.FWMark)
	}
	return v.Protocol + " " + v.Addr.String()
}

// String is the virtual server's line, as ipvsadm -Ln prints it.
func (v *Virtual) String() string {
	var b strings.Builder
	b.WriteString(v.Key() + " " + v.Scheduler)
	if len(v.SchedFlags) > 0 {
		b.WriteString(" (" + strings.Join(v.SchedFlags, ",") + ")")
	}
	if v.Persistent > 0 {
		fmt.Fprintf(&b, " persistent %d", v.Persistent)
		if v.Netmask != "" {
			b.WriteString(" mask " + v.Netmask)
		}
	}
	if v.OnePacket {
		b.WriteString(" ops")
	}
	return b.String()
}

// String is the real server's line, as ipvsadm -Ln prints it.
func (r Real) String() string {
	if r.Redacted {
		return fmt.Sprintf("-> (address redacted) %s %d", r.Forward, r.Weight)
	}
	return fmt.Sprintf("-> %s %s %d", r.Addr, r.Forward, r.Weight)
}
