package ipvs

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// IPSets are a node's ipsets, by name.
type IPSets struct {
	Sets map[string]*IPSet
	// Notes say what the reader kept without understanding (set types,
	// options), or could not apply.
	Notes []string
}

// IPSet is one set.
type IPSet struct {
	Name string
	// Type is ipset's: "hash:ip,port", "bitmap:port", …
	Type string
	// Family is "inet" or "inet6"; empty for a type without one
	// (bitmap:port, bitmap:ip). A hash set created without one is inet,
	// as ipset makes it.
	Family string
	// Options are the create line's tokens after the type, verbatim,
	// less "family F" (hashsize 1024 maxelem 65536 …).
	Options []string
	Members []Member
	// Line is where the dump creates or names it (1-based).
	Line int

	// The index Has looks members up in, built on its first call from
	// the fields above (so a set made by hand is indexed as well). A set
	// must not change after that.
	once sync.Once
	ix   *ipsetIndex
}

// Member is one entry, as ipset prints it ("10.96.0.10,tcp:80", "30080",
// "10.244.1.5,tcp:8080,10.244.1.5", "1.2.3.4,tcp:80,10.0.0.0/8"),
// without the options after it (comment, timeout, counters), with its
// line.
type Member struct {
	Text string
	Line int
}

// dims are the dimensions of a set type the reader matches: 'a' an
// address (ip or net), 'p' a protocol and port, 'b' a bare port
// (bitmap:port, any protocol). Empty for a type it does not know.
func dims(typ string) string {
	switch typ {
	case "hash:ip", "hash:net", "bitmap:ip":
		return "a"
	case "hash:ip,port", "hash:net,port":
		return "ap"
	case "hash:net,net":
		return "aa"
	case "hash:ip,port,ip", "hash:ip,port,net", "hash:net,port,net":
		return "apa"
	case "bitmap:port":
		return "b"
	}
	return ""
}

// family is the address family a set's members and packets are of:
// empty when it has no address dimension.
func (s *IPSet) family() string {
	switch {
	case !strings.Contains(dims(s.Type), "a"):
		return ""
	case s.Type == "bitmap:ip":
		return "inet"
	case s.Family == "":
		return "inet"
	}
	return s.Family
}

// netmask is the prefix length a hash:ip or bitmap:ip set created with
// "netmask N" stores its addresses as (0: none).
func (s *IPSet) netmask() int {
	if s.Type != "hash:ip" && s.Type != "bitmap:ip" {
		return 0
	}
	for i := 0; i+1 < len(s.Options); i++ {
		if s.Options[i] == "netmask" {
			if n, err := strconv.Atoi(s.Options[i+1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// token is a field of a line with its 1-based column. A field opening
// with a double quote runs to the closing one (a comment's text).
type token struct {
	s   string
	col int
}

// blank is a byte between tokens.
func blank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// tokens splits s at blanks; off is where s starts in its line.
func tokens(s string, off int) []token {
	var t []token
	for i := 0; i < len(s); {
		if blank(s[i]) {
			i++
			continue
		}
		start := i
		if s[i] == '"' {
			if j := strings.IndexByte(s[i+1:], '"'); j >= 0 {
				i += j + 2
			} else {
				i = len(s)
			}
		} else {
			for i < len(s) && !blank(s[i]) {
				i++
			}
		}
		t = append(t, token{s[start:i], off + start + 1})
	}
	return t
}

// ParseIPSets reads a node's ipsets from `ipset save` (create and add
// lines; -N and -A for them too) or `ipset list` (a block per set: Name:,
// Type:, Header:, …, Members:), whichever the text is.
func ParseIPSets(text string) (*IPSets, error) {
	for _, l := range strings.Split(text, "\n") {
		if t := tokens(l, 0); len(t) > 0 {
			if strings.HasPrefix(t[0].s, "Name:") {
				return parseIPSetList(text)
			}
			break
		}
	}
	return parseIPSetSave(text)
}

// parseIPSetSave reads `ipset save`.
func parseIPSetSave(text string) (*IPSets, error) {
	s := &IPSets{Sets: map[string]*IPSet{}}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		t := tokens(line, 0)
		if len(t) == 0 || strings.HasPrefix(t[0].s, "#") {
			continue
		}
		switch t[0].s {
		case "create", "-N":
			if len(t) < 3 {
				return nil, &ParseError{n, t[0].col, "create needs a set name and a type"}
			}
			set, err := s.newSet(t[1], n)
			if err != nil {
				return nil, err
			}
			if err := setType(set, t[2], n); err != nil {
				return nil, err
			}
			if err := s.setOptions(set, t[3:], n); err != nil {
				return nil, err
			}
			s.settle(set, n)
		case "add", "-A":
			if len(t) < 3 {
				return nil, &ParseError{n, t[0].col, "add needs a set name and an entry"}
			}
			set := s.Sets[t[1].s]
			if set == nil {
				return nil, &ParseError{n, t[1].col, fmt.Sprintf("add to set %q, which no create line before makes", t[1].s)}
			}
			if err := s.addMember(set, t[2:], n); err != nil {
				return nil, err
			}
		default:
			return nil, &ParseError{n, t[0].col, fmt.Sprintf("%q: want create or add (ipset save), or Name: (ipset list)", t[0].s)}
		}
	}
	return s, nil
}

// newSet makes the set a create or Name: line names.
func (s *IPSets) newSet(name token, n int) (*IPSet, error) {
	if strings.Contains(name.s, `"`) {
		return nil, &ParseError{n, name.col, fmt.Sprintf("set name %s: want one without quotes", name.s)}
	}
	if old := s.Sets[name.s]; old != nil {
		return nil, &ParseError{n, name.col, fmt.Sprintf("set %s is already made on line %d", name.s, old.Line)}
	}
	set := &IPSet{Name: name.s, Line: n}
	s.Sets[name.s] = set
	return set, nil
}

func setType(set *IPSet, typ token, n int) error {
	if strings.Contains(typ.s, `"`) {
		return &ParseError{n, typ.col, fmt.Sprintf("set %s: type %s: want one without quotes", set.Name, typ.s)}
	}
	set.Type = typ.s
	return checkSetType(set, typ, n)
}

// setOptions reads a set's options, from its create line or its
// listing's Header:.
func (s *IPSets) setOptions(set *IPSet, t []token, n int) error {
	for j := 0; j < len(t); j++ {
		o := t[j].s
		switch o {
		case "family", "hashsize", "maxelem", "bucketsize", "initval", "range", "netmask",
			"bitmask", "timeout", "markmask", "size", "probes", "resize":
			if j+1 >= len(t) {
				return &ParseError{n, t[j].col, fmt.Sprintf("set %s: %s needs a value", set.Name, o)}
			}
			j++
			v := t[j]
			switch o {
			case "family":
				if v.s != "inet" && v.s != "inet6" {
					return &ParseError{n, v.col, fmt.Sprintf("set %s: family %q: want inet or inet6", set.Name, v.s)}
				}
				set.Family = v.s
				continue
			case "netmask":
				if b, err := strconv.Atoi(v.s); err != nil || b < 1 || b > 128 {
					return &ParseError{n, v.col, fmt.Sprintf("set %s: netmask %q: want a prefix length", set.Name, v.s)}
				}
			case "bitmask":
				s.Notes = append(s.Notes, fmt.Sprintf("line %d: set %s: bitmask %s is not applied: members are matched as if it were absent", n, set.Name, v.s))
			}
			set.Options = append(set.Options, o, v.s)
		case "counters", "comment", "skbinfo", "forceadd":
			set.Options = append(set.Options, o)
		default:
			s.Notes = append(s.Notes, fmt.Sprintf("line %d: set %s: option %q not understood, kept", n, set.Name, o))
			set.Options = append(set.Options, o)
		}
	}
	return nil
}

// settle completes a set once its type and options are read: a hash
// set's default family, and a note for a type the reader does not know.
func (s *IPSets) settle(set *IPSet, n int) {
	if dims(set.Type) == "" {
		s.Notes = append(s.Notes, fmt.Sprintf("line %d: set %s: type %q not understood: its members are kept, never matched", n, set.Name, set.Type))
		return
	}
	if set.Family == "" && strings.HasPrefix(set.Type, "hash:") {
		set.Family = "inet"
	}
	if set.Family == "inet6" && set.Type == "bitmap:ip" {
		// bitmap:ip is IPv4 only: ipset refuses the family.
		s.Notes = append(s.Notes, fmt.Sprintf("line %d: set %s: bitmap:ip of family inet6, matched as inet", n, set.Name))
	}
}

// addMember reads an entry and the options after it (t[0] the entry).
func (s *IPSets) addMember(set *IPSet, t []token, n int) error {
	if d := dims(set.Type); d != "" {
		if _, off, err := parseEntry(t[0].s, d, set.family(), set.netmask()); err != nil {
			return &ParseError{n, t[0].col + off, fmt.Sprintf("set %s (%s): %v", set.Name, set.Type, err)}
		}
	}
	for _, o := range t[1:] {
		if o.s == "nomatch" {
			s.Notes = append(s.Notes, fmt.Sprintf("line %d: set %s: %s is a nomatch exception, which is not applied (and not saved): packets in it are matched as if it were absent", n, set.Name, t[0].s))
		}
	}
	set.Members = append(set.Members, Member{Text: t[0].s, Line: n})
	return nil
}

// parseIPSetList reads `ipset list`.
func parseIPSetList(text string) (*IPSets, error) {
	lp := listParser{s: &IPSets{Sets: map[string]*IPSet{}}}
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && len(tokens(lines[len(lines)-1], 0)) == 0 {
		lines = lines[:len(lines)-1] // blank lines at the end close nothing: the text does
	}
	for i, line := range lines {
		if err := lp.line(line, i+1); err != nil {
			return nil, err
		}
	}
	s, cur, last := lp.s, lp.cur, lp.last
	if cur != nil {
		if !lp.members && (cur.Type == "" || lp.entries == nil) {
			return nil, &ParseError{last, 1, fmt.Sprintf("set %s: the dump ends inside its header", cur.Name)}
		}
		if err := lp.end(last); err != nil {
			return nil, err
		}
	}
	if lp.cut != nil {
		// The last set is short of members: the dump is cut.
		lp.cut.Line, lp.cut.Col = last, 1
		return nil, &cutSets{ParseError: lp.cut, sets: s, note: lp.cutNote}
	}
	return s, nil
}

// Save renders the sets as `ipset save` does, sorted by name: a create
// line (type, family, options), then an add line per member.
func (s *IPSets) Save() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(s.Sets)) {
		set := s.Sets[name]
		b.WriteString("create " + set.Name + " " + set.Type)
		if set.Family != "" {
			b.WriteString(" family " + set.Family)
		}
		for _, o := range set.Options {
			b.WriteString(" " + o)
		}
		b.WriteByte('\n')
		for _, m := range set.Members {
			b.WriteString("add " + set.Name + " " + m.Text + "\n")
		}
	}
	return b.String()
}

// part is one dimension of an entry.
type part struct {
	// An address dimension: the prefix lo/bits, or the range lo-hi
	// (bits -1).
	lo, hi netip.Addr
	bits   int
	// A port dimension: the protocol ("" for any) and ports plo-phi.
	// never is an ICMP type, which no packet here carries.
	proto    string
	plo, phi uint16
	never    bool
}

// entry is a member's dimensions (ipset has at most three).
type entry [3]part

// parseEntry reads a member of a set of dimensions d and family fam;
// netmask, when above 0, is the prefix its addresses are stored as. On
// error, off is where in text the bad dimension starts.
func parseEntry(text, d, fam string, netmask int) (e entry, off int, err error) {
	parts := strings.Split(text, ",")
	if len(parts) != len(d) {
		return e, 0, fmt.Errorf("%q: want %d dimensions, comma-separated", text, len(d))
	}
	for i, p := range parts {
		switch d[i] {
		case 'a':
			e[i], err = parseAddrPart(p, fam, netmask)
		case 'p':
			e[i], err = parsePortPart(p)
		case 'b':
			e[i], err = parseBarePort(p)
		}
		if err != nil {
			return e, off, err
		}
		off += len(p) + 1
	}
	return e, 0, nil
}

// parseAddrPart reads an address dimension: an address, a prefix
// ("10.0.0.0/8") or a range ("10.0.0.1-10.0.0.5").
func parseAddrPart(p, fam string, netmask int) (part, error) {
	addr := func(s string) (netip.Addr, error) {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil || a.Zone() != "":
			return a, fmt.Errorf("%q: want an address", s)
		case fam == "inet" && !a.Is4():
			return a, fmt.Errorf("%q: want an IPv4 address (family inet)", s)
		case fam == "inet6" && !a.Is6():
			return a, fmt.Errorf("%q: want an IPv6 address (family inet6)", s)
		}
		return a, nil
	}
	if from, to, ok := strings.Cut(p, "-"); ok {
		lo, err := addr(from)
		if err != nil {
			return part{}, err
		}
		hi, err := addr(to)
		if err != nil {
			return part{}, err
		}
		if hi.Less(lo) {
			return part{}, fmt.Errorf("%q: the range ends before it starts", p)
		}
		return part{lo: lo, hi: hi, bits: -1}, nil
	}
	a, bits := p, -1
	if s, l, ok := strings.Cut(p, "/"); ok {
		b, err := strconv.Atoi(l)
		if err != nil || b < 0 {
			return part{}, fmt.Errorf("%q: want a prefix length after /", p)
		}
		a, bits = s, b
	}
	lo, err := addr(a)
	if err != nil {
		return part{}, err
	}
	if bits < 0 {
		bits = lo.BitLen()
	}
	if netmask > 0 && netmask < bits {
		bits = netmask
	}
	pf, err := lo.Prefix(bits)
	if err != nil {
		return part{}, fmt.Errorf("%q: prefix length %d is past the address's %d bits", p, bits, lo.BitLen())
	}
	return part{lo: pf.Addr(), hi: lastAddr(pf), bits: bits}, nil
}

// lastAddr is the last address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// parsePortPart reads a protocol and port dimension: "tcp:80", "80"
// (tcp, as ipset takes it), "udp:53-54", "icmp:echo-request".
func parsePortPart(p string) (part, error) {
	proto, ports, ok := strings.Cut(p, ":")
	if !ok {
		proto, ports = "tcp", p
	}
	proto = strings.ToLower(proto)
	if proto == "" {
		return part{}, fmt.Errorf("%q: want PROTOCOL:PORT", p)
	}
	if proto == "icmp" || proto == "icmpv6" || proto == "ipv6-icmp" {
		if ports == "" {
			return part{}, fmt.Errorf("%q: want an ICMP type after the protocol", p)
		}
		return part{proto: proto, never: true}, nil
	}
	lo, hi, err := portRange(ports)
	if err != nil {
		return part{}, err
	}
	return part{proto: proto, plo: lo, phi: hi}, nil
}

// parseBarePort reads a bitmap:port member: "30080", "30000-30010"; a
// protocol before a port ("tcp:30080") is taken and left aside, as
// ipset does.
func parseBarePort(p string) (part, error) {
	from, to, ok := strings.Cut(p, "-")
	strip := func(s string) string {
		if i := strings.IndexByte(s, ':'); i >= 0 {
			return s[i+1:]
		}
		return s
	}
	r := strip(from)
	if ok {
		r += "-" + strip(to)
	}
	lo, hi, err := portRange(r)
	if err != nil {
		return part{}, err
	}
	return part{plo: lo, phi: hi}, nil
}

// portRange reads "80" or "80-86".
func portRange(s string) (lo, hi uint16, err error) {
	num := func(s string) (uint16, error) {
		v, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("port %q: want a number from 0 to 65535", s)
		}
		return uint16(v), nil
	}
	from, to, ok := strings.Cut(s, "-")
	if lo, err = num(from); err != nil {
		return 0, 0, err
	}
	hi = lo
	if ok {
		if hi, err = num(to); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("ports %q: the range ends before it starts", s)
		}
	}
	return lo, hi, nil
}

// ixVal is one dimension of an index key: a masked address and its
// prefix length, or a protocol and port.
type ixVal struct {
	addr  netip.Addr
	bits  int
	proto string
	port  uint16
}

// ipsetIndex finds a set's members as the kernel does: a hash lookup per
// combination of prefix lengths in use. Members with a range are looked
// through one by one (ipset's own dumps have them expanded).
type ipsetIndex struct {
	dims   string
	family string
	exact  map[[3]ixVal]struct{}
	combos [][3]int
	ranged []entry
}

// index is the set's index, built once; nil for a type not understood.
func (s *IPSet) index() *ipsetIndex {
	s.once.Do(func() {
		d := dims(s.Type)
		if d == "" {
			return
		}
		ix := &ipsetIndex{dims: d, family: s.family(), exact: make(map[[3]ixVal]struct{}, len(s.Members))}
		nm := s.netmask()
		for _, m := range s.Members {
			e, _, err := parseEntry(m.Text, d, ix.family, nm)
			if err != nil {
				continue // a set made by hand: what ipset would refuse matches nothing
			}
			var k [3]ixVal
			var combo [3]int
			exact, never := true, false
			for i := range d {
				p := e[i]
				switch {
				case p.never:
					never = true
				case d[i] == 'a' && p.bits >= 0:
					k[i], combo[i] = ixVal{addr: p.lo, bits: p.bits}, p.bits
				case d[i] != 'a' && p.plo == p.phi:
					k[i] = ixVal{proto: p.proto, port: p.plo}
				default:
					exact = false
				}
			}
			switch {
			case never:
			case exact:
				ix.exact[k] = struct{}{}
				if !slices.Contains(ix.combos, combo) {
					ix.combos = append(ix.combos, combo)
				}
			default:
				ix.ranged = append(ix.ranged, e)
			}
		}
		s.ix = ix
	})
	return s.ix
}

// Has reports whether the set holds an entry matching the packet, the
// set's dimensions taken in the directions of dirs, one per dimension,
// "src" or "dst" (`-m set --match-set NAME dst,dst,src`). An address
// dimension is the packet's source or destination address; a port one
// its protocol ("tcp", "udp", "sctp") with the source or destination
// port (bitmap:port's bare ports match any protocol). As in the kernel,
// fewer directions than dimensions, or a packet of the other family,
// match nothing; so does a direction that is neither src nor dst. ok is
// false when the set does not exist or its type is not understood.
func (s *IPSets) Has(name string, dirs []string, src, dst netip.Addr, protocol string, sport, dport uint16) (match, ok bool) {
	if s == nil || s.Sets[name] == nil {
		return false, false
	}
	ix := s.Sets[name].index()
	if ix == nil {
		return false, false
	}
	if len(dirs) < len(ix.dims) {
		return false, true
	}
	protocol = strings.ToLower(protocol)
	var pkt [3]ixVal
	for i := range ix.dims {
		var a netip.Addr
		var port uint16
		switch dirs[i] {
		case "src":
			a, port = src, sport
		case "dst":
			a, port = dst, dport
		default:
			return false, true
		}
		switch ix.dims[i] {
		case 'a':
			if ix.family == "inet" && !a.Is4() || ix.family == "inet6" && !a.Is6() {
				return false, true
			}
			pkt[i].addr = a
		case 'p':
			pkt[i].proto, pkt[i].port = protocol, port
		case 'b':
			pkt[i].port = port
		}
	}
	for _, combo := range ix.combos {
		k := pkt
		for i := range ix.dims {
			if ix.dims[i] == 'a' {
				p, _ := pkt[i].addr.Prefix(combo[i])
				k[i] = ixVal{addr: p.Addr(), bits: combo[i]}
			}
		}
		if _, hit := ix.exact[k]; hit {
			return true, true
		}
	}
	for _, e := range ix.ranged {
		if e.matches(ix.dims, pkt) {
			return true, true
		}
	}
	return false, true
}

// matches reports whether a packet's dimensions are in the entry's.
func (e *entry) matches(d string, pkt [3]ixVal) bool {
	for i := range d {
		p, v := e[i], pkt[i]
		switch d[i] {
		case 'a':
			if v.addr.Less(p.lo) || p.hi.Less(v.addr) {
				return false
			}
		case 'p', 'b':
			if p.never || (d[i] == 'p' && p.proto != v.proto) || v.port < p.plo || v.port > p.phi {
				return false
			}
		}
	}
	return true
}
