package iptables

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Extensions are what another data plane adds to a walk of these rules:
// kube-proxy's ipvs mode keeps iptables rules that match ipsets, and hands
// the packets they accept for a local address to IPVS.
type Extensions struct {
	// Sets answers -m set --match-set; without it every set is taken as
	// empty, with a note.
	Sets SetLookup
	// LocalIn is what takes a packet the input hook accepted, before it
	// is delivered to a local socket: the ways it goes on (IPVS's real
	// servers), or nil when the packet is delivered locally as it is.
	LocalIn func(pkt Packet, o dataplane.WalkOptions) []Onward
	// LocalInPart, when set, names the part of the other plane's state
	// (its dataplane.StateParts) that LocalIn reads for the packet: a walk
	// scope tells it among its reads (dataplane.ScopeReads), whether or
	// not LocalIn found anything there.
	LocalInPart func(pkt Packet) uint64
	// Gate judges the packet after the iptables tables of the hooks it
	// knows, by rules no iptables dump shows (another component's
	// nftables table); nil: none.
	Gate dataplane.Gate
}

// SetLookup tells whether a packet matches an ipset, its dimensions taken
// in the directions dirs ("src", "dst"); ok is false when the set is not
// known.
type SetLookup interface {
	Has(name string, dirs []string, src, dst netip.Addr, protocol string, sport, dport uint16) (match, ok bool)
}

// Onward is one way a packet taken at local input goes on.
type Onward struct {
	Probability float64
	// Hops are the steps that chose this way (the virtual server, the
	// real server).
	Hops []dataplane.Hop
	// To is the new destination; with Verdict set it is not used.
	To netip.AddrPort
	// Verdict ends the packet there (Reject, Drop), for Reason.
	Verdict dataplane.Verdict
	Reason  string
	// AffinitySeconds and AffinityKey: the way keeps its clients (IPVS
	// persistence).
	AffinitySeconds int32
	AffinityKey     string
	Notes           []string
}

// hookOutputOnward is the output hook of a packet sent on from local
// input (IPVS's transmit): its connection's destination NAT is settled,
// so the nat table's output chain does not see it.
const hookOutputOnward dataplane.Hook = "output-onward"

// NewWalkerWith prepares a walker with another plane's extensions.
func NewWalkerWith(rs *Ruleset, env *Env, ext Extensions) *Walker {
	w := NewWalker(rs, env)
	w.ext = ext
	if ext.LocalIn != nil {
		hc := &hookChains{name: "OUTPUT", tables: []string{"mangle", "filter", "security"}}
		for _, t := range hc.tables {
			hc.chains = append(hc.chains, rs.Chain(t, hc.name))
		}
		w.hooks[hookOutputOnward] = hc
	}
	return w
}

// localIn hands a packet the input hook accepted to the extension, once
// per branch, and walks each way it goes on: output (without nat) and
// postrouting, or on up the input path when its new destination is
// local.
func (w *Walker) localIn(s *state, rest []dataplane.Hook, out *[]dataplane.Branch) bool {
	if w.ext.LocalIn == nil || s.onward {
		return false
	}
	if sc := s.walk.scope; sc != nil && w.ext.LocalInPart != nil {
		sc.read(w.ext.LocalInPart(s.pkt))
	}
	ways := w.ext.LocalIn(s.pkt, *s.opts)
	if ways == nil {
		return false
	}
	for i, o := range ways {
		st := s
		if i < len(ways)-1 {
			st = s.fork()
		}
		st.onward = true
		st.prob *= o.Probability
		for _, h := range o.Hops {
			st.addHop(h)
		}
		rare := st.setRare()
		for _, n := range o.Notes {
			rare.notes.Add("%s", n)
		}
		rare.affinity, rare.affinityKey = o.AffinitySeconds, o.AffinityKey
		rare.virtual = netip.AddrPortFrom(st.pkt.Dst, st.pkt.DstPort)
		if o.Verdict != "" {
			st.verdict, st.reason = string(o.Verdict), o.Reason
			*out = append(*out, st.finish())
			continue
		}
		st.pkt.Dst, st.pkt.DstPort, st.dnat, st.translated = o.To.Addr(), o.To.Port(), o.To.String(), true
		if w.env.IsLocal(st.pkt.Dst) {
			// To a local address (a host-network endpoint of this
			// node), IPVS passes the packet on up the input path: it
			// never reaches output or postrouting.
			w.runHooks(st, rest, out)
			continue
		}
		w.runHooks(st, append([]dataplane.Hook{hookOutputOnward, dataplane.HookPostrouting, dataplane.RouteLoopback}, rest...), out)
	}
	return true
}

// set evaluates -m set: every --match-set of the match must hold.
func (w *Walker) set(s *state, r *Rule, m *Match) matchResult {
	for _, o := range m.Options {
		if o.Name != "match-set" {
			if o.Name != "return-nomatch" && o.Name != "update-counters" && o.Name != "update-subcounters" {
				s.note("%s: set option --%s not evaluated; assumed to match", r.Ref(), o.Name)
			}
			continue
		}
		if len(o.Args) < 2 {
			s.note("%s: --match-set without a set and its directions; assumed not to match", r.Ref())
			return noMatch
		}
		// A set that cannot be read is assumed to hold no member (so a
		// negated match holds), and said.
		in, ok := false, false
		if w.ext.Sets != nil {
			p := s.pkt
			in, ok = w.ext.Sets.Has(o.Args[0], splitDirs(o.Args[1]), p.Src, p.Dst, p.Protocol, p.SrcPort, p.DstPort)
		}
		switch {
		case w.ext.Sets == nil:
			s.note("%s: ipset %s not read; assumed to hold no member", r.Ref(), o.Args[0])
		case !ok:
			s.note("%s: ipset %s is not in the dump; assumed to hold no member", r.Ref(), o.Args[0])
		}
		if in == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

func splitDirs(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// ipvs evaluates -m ipvs: whether the packet belongs to an IPVS connection
// (one local input handed over), and that connection's virtual address,
// port and protocol.
func (w *Walker) ipvs(s *state, r *Rule, m *Match) matchResult {
	var virtual netip.AddrPort
	if s.rare != nil {
		virtual = s.rare.virtual
	}
	owned := s.onward && virtual.IsValid()
	for _, o := range m.Options {
		ok := owned
		switch {
		case o.Name == "ipvs":
		case !owned:
			return noMatch
		case o.Name == "vaddr" && len(o.Args) > 0:
			ok = addrArgMatches(o.Args[0], virtual.Addr())
		case o.Name == "vport" && len(o.Args) > 0:
			ok = o.Args[0] == strconv.Itoa(int(virtual.Port()))
		case o.Name == "vproto" && len(o.Args) > 0:
			ok = strings.EqualFold(o.Args[0], s.pkt.Protocol) || o.Args[0] == protoNumber(s.pkt.Protocol)
		case o.Name == "vdir" && len(o.Args) > 0:
			ok = strings.EqualFold(o.Args[0], "ORIGINAL") // a first packet
		case o.Name == "vmethod" && len(o.Args) > 0:
			ok = strings.EqualFold(o.Args[0], "MASQ") // kube-proxy's forwarding
		default:
			s.note("%s: ipvs option --%s not evaluated; assumed to match", r.Ref(), o.Name)
			continue
		}
		if ok == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

// addrArgMatches tells whether a is the address, or in the prefix, arg
// names.
func addrArgMatches(arg string, a netip.Addr) bool {
	if p, err := netip.ParsePrefix(arg); err == nil {
		return p.Contains(a)
	}
	b, err := netip.ParseAddr(arg)
	return err == nil && b == a
}

// protoNumber is a protocol's number as iptables may print it.
func protoNumber(proto string) string {
	switch proto {
	case "tcp":
		return "6"
	case "udp":
		return "17"
	case "sctp":
		return "132"
	}
	return ""
}
