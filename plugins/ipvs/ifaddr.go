package ipvs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// ParseIfAddrs reads the addresses of interfaces, with their prefix
// lengths, in the order shown, from `ip addr show` (or its one-line
// form, `ip -o addr show`) or `ip -j addr show`, whichever the text is.
// An interface shown without addresses is there with none; one of the
// one-line form without addresses is not shown at all.
func ParseIfAddrs(text string) (map[string][]netip.Prefix, error) {
	if t := strings.TrimLeft(text, " \t\r\n"); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return parseIfAddrsJSON(text)
	}
	return parseIfAddrsText(text)
}

// parseIfAddrsText reads `ip addr show` and `ip -o addr show`: an
// interface line ("5: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 …") then
// its indented lines ("    inet 10.96.0.1/32 scope global kube-ipvs0"),
// or a line per address ("5: kube-ipvs0    inet 10.96.0.1/32 …").
func parseIfAddrsText(text string) (map[string][]netip.Prefix, error) {
	var seen shownIfs
	var cur *shownIf
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		t := tokens(line, 0)
		if len(t) == 0 {
			continue
		}
		if strings.Trim(line, ". \t\r") == "" {
			// A ticket's elision ("..."): the interfaces it hides are
			// not in the dump; an address after it is no one's.
			cur = nil
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if t[0].s != "inet" && t[0].s != "inet6" {
				continue // link/ether, valid_lft, altname, …
			}
			if cur == nil {
				return nil, &ParseError{n, t[0].col, "an address before any interface"}
			}
			p, err := ifAddr(t, n)
			if err != nil {
				return nil, err
			}
			cur.addrs = append(cur.addrs, p)
			if t[0].s == "inet" && len(t) > 2 {
				// ip ends an IPv4 address's line with its label: the
				// interface's name, or an alias of it ("eth0:1").
				cur.labels = append(cur.labels, t[len(t)-1].s)
			}
			continue
		}
		idx, ok := strings.CutSuffix(t[0].s, ":")
		if _, err := strconv.ParseUint(idx, 10, 32); !ok || err != nil {
			return nil, &ParseError{n, t[0].col, fmt.Sprintf("%q: want an interface's index and name (5: kube-ipvs0: …) or an address line", t[0].s)}
		}
		if len(t) < 2 {
			return nil, &ParseError{n, t[0].col, "an interface index without a name"}
		}
		name, header := ifName(t)
		if name == "" {
			return nil, &ParseError{n, t[1].col, fmt.Sprintf("%q: want an interface name", t[1].s)}
		}
		if !header && len(t) >= 3 && strings.HasPrefix(t[2].s, "link/") {
			continue // the one-line form's link line: no address
		}
		cur = seen.get(name, header)
		if header {
			continue
		}
		// The one-line form: the address follows the name.
		if len(t) < 3 || (t[2].s != "inet" && t[2].s != "inet6") {
			return nil, &ParseError{n, t[1].col + len(t[1].s), "want inet or inet6 and an address after the interface's name"}
		}
		p, err := ifAddr(t[2:], n)
		if err != nil {
			return nil, err
		}
		cur.addrs = append(cur.addrs, p)
	}
	return seen.byName(), nil
}

// ifName reads the interface's name off a line that starts with its
// index, and whether the line is an interface's header (ip addr show)
// rather than one of the one-line form (ip -o addr show). The form is
// told by what follows the name, not by a colon ending it, since a name
// may end in one. The one-line form prints the name alone, which is
// returned as it is; the header prints "name:", or "name@link:" for an
// interface with a link, returned without the colon: its link is left
// out later (shownIfs.byName), once every interface is known.
func ifName(t []token) (name string, header bool) {
	if len(t) >= 3 && (t[2].s == "inet" || t[2].s == "inet6" || strings.HasPrefix(t[2].s, "link/")) {
		return t[1].s, false
	}
	name, header = strings.CutSuffix(t[1].s, ":")
	return name, header
}

// ifAddr reads "inet 10.96.0.1/32 …", or a point-to-point address,
// "inet 10.0.0.1 peer 10.0.0.2/32 …", whose length is the peer's.
func ifAddr(t []token, n int) (netip.Prefix, error) {
	if len(t) < 2 {
		return netip.Prefix{}, &ParseError{n, t[0].col, t[0].s + " needs an address"}
	}
	a := t[1]
	text, bits, hasLen := strings.Cut(a.s, "/")
	if !hasLen && len(t) >= 4 && t[2].s == "peer" {
		_, bits, hasLen = strings.Cut(t[3].s, "/")
	}
	addr, err := netip.ParseAddr(text)
	if err != nil || addr.Zone() != "" || addr.Is4() != (t[0].s == "inet") {
		return netip.Prefix{}, &ParseError{n, a.col, fmt.Sprintf("%q: want an %s address", a.s, version(t[0].s))}
	}
	l := addr.BitLen()
	if hasLen {
		if l, err = strconv.Atoi(bits); err != nil || l < 0 || l > addr.BitLen() {
			return netip.Prefix{}, &ParseError{n, a.col, fmt.Sprintf("%q: want a prefix length from 0 to %d", a.s, addr.BitLen())}
		}
	}
	return netip.PrefixFrom(addr, l), nil
}

// parseIfAddrsJSON reads `ip -j addr show`: an array of interfaces, each
// {"ifname": …, "addr_info": [{"family": …, "local": …, "prefixlen": …}]}.
// ip prints an empty object for an interface or address its filters
// leave out: those are passed over.
func parseIfAddrsJSON(text string) (map[string][]netip.Prefix, error) {
	r := &jsonReader{text: text, dec: json.NewDecoder(strings.NewReader(text))}
	r.dec.UseNumber()
	ifs := map[string][]netip.Prefix{}
	if err := r.delim('[', "an array of interfaces"); err != nil {
		return nil, err
	}
	for r.dec.More() {
		start := r.next()
		if err := r.delim('{', "an interface object"); err != nil {
			return nil, err
		}
		name, named := "", false
		var addrs []netip.Prefix
		for r.dec.More() {
			key, err := r.key()
			if err != nil {
				return nil, err
			}
			switch key {
			case "ifname":
				at := r.next()
				if err := r.value(at, &name, "ifname: want a string"); err != nil {
					return nil, err
				}
				if name == "" {
					return nil, r.errAt(at, "ifname: want an interface name")
				}
				named = true
			case "addr_info":
				if addrs, err = r.addrInfo(); err != nil {
					return nil, err
				}
			default:
				if err := r.skip(); err != nil {
					return nil, err
				}
			}
		}
		if err := r.delim('}', "the end of the interface"); err != nil {
			return nil, err
		}
		if !named {
			if len(addrs) > 0 {
				return nil, r.errAt(start, "addresses of an interface without ifname")
			}
			continue
		}
		ifs[name] = append(ifs[name], addrs...)
	}
	if err := r.delim(']', "the end of the array"); err != nil {
		return nil, err
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return nil, r.errAt(r.next(), "text after the array of interfaces")
	}
	return ifs, nil
}

// jsonReader walks ip's JSON token by token, to say where a bad value
// is.
type jsonReader struct {
	text string
	dec  *json.Decoder
}

// next is the offset of the next value: past blanks, a colon or a comma.
func (r *jsonReader) next() int {
	i := int(r.dec.InputOffset())
	for i < len(r.text) && strings.IndexByte(" \t\r\n:,", r.text[i]) >= 0 {
		i++
	}
	return i
}

// errAt is a *ParseError at a byte offset of the text.
func (r *jsonReader) errAt(off int, msg string) *ParseError {
	off = min(off, len(r.text))
	line := 1 + strings.Count(r.text[:off], "\n")
	return &ParseError{line, off - strings.LastIndexByte(r.text[:off], '\n'), msg}
}

// fail is the error of a JSON syntax error, where the decoder met it.
func (r *jsonReader) fail(err error, want string) *ParseError {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The decoder's offset is where its last token ended; a whole
		// read of the text says which byte is wrong.
		if whole := json.Unmarshal([]byte(r.text), new(json.RawMessage)); errors.As(whole, &se) {
			return r.errAt(max(int(se.Offset)-1, 0), "JSON: "+se.Error())
		}
		return r.errAt(r.next(), "JSON: "+err.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		end := strings.TrimRight(r.text, " \t\r\n")
		return r.errAt(max(len(end)-1, 0), "the JSON ends before "+want)
	}
	return r.errAt(r.next(), "JSON: "+err.Error())
}

// delim reads a delimiter.
func (r *jsonReader) delim(d json.Delim, want string) error {
	at := r.next()
	t, err := r.dec.Token()
	if err != nil {
		return r.fail(err, want)
	}
	if t != d {
		return r.errAt(at, fmt.Sprintf("want %s (%q)", want, string(d)))
	}
	return nil
}

// key reads an object's key.
func (r *jsonReader) key() (string, error) {
	t, err := r.dec.Token()
	if err != nil {
		return "", r.fail(err, "a key")
	}
	k, _ := t.(string)
	return k, nil
}

// value reads a value into v; msg says what was wanted when it is of
// another JSON type.
func (r *jsonReader) value(at int, v any, msg string) error {
	err := r.dec.Decode(v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return r.fail(err, "a value")
	}
	return r.errAt(at, msg)
}

// skip reads a value it has no use for.
func (r *jsonReader) skip() error {
	var v json.RawMessage
	if err := r.dec.Decode(&v); err != nil {
		return r.fail(err, "a value")
	}
	return nil
}

// addrInfo reads addr_info: [{"family": "inet", "local": "10.96.0.1",
// "prefixlen": 32, …}]. Families other than inet and inet6 are passed
// over; a point-to-point address's own is "local", its peer "address".
func (r *jsonReader) addrInfo() ([]netip.Prefix, error) {
	if err := r.delim('[', "addr_info's array"); err != nil {
		return nil, err
	}
	var ps []netip.Prefix
	for r.dec.More() {
		start := r.next()
		if err := r.delim('{', "an address object"); err != nil {
			return nil, err
		}
		var family, local string
		var bits json.Number
		localAt, bitsAt := start, start
		empty := true
		for r.dec.More() {
			key, err := r.key()
			if err != nil {
				return nil, err
			}
			empty = false
			at := r.next()
			switch key {
			case "family":
				err = r.value(at, &family, "family: want a string")
			case "local":
				localAt = at
				err = r.value(at, &local, "local: want a string")
			case "prefixlen":
				bitsAt = at
				err = r.value(at, &bits, "prefixlen: want a number")
			default:
				err = r.skip()
			}
			if err != nil {
				return nil, err
			}
		}
		if err := r.delim('}', "the end of the address"); err != nil {
			return nil, err
		}
		if empty || (family != "inet" && family != "inet6") {
			continue
		}
		addr, err := netip.ParseAddr(local)
		if err != nil || addr.Zone() != "" || addr.Is4() != (family == "inet") {
			return nil, r.errAt(localAt, fmt.Sprintf("local %q: want an %s address", local, version(family)))
		}
		l, err := strconv.Atoi(bits.String())
		if err != nil || l < 0 || l > addr.BitLen() {
			return nil, r.errAt(bitsAt, fmt.Sprintf("prefixlen %q: want a number from 0 to %d", bits.String(), addr.BitLen()))
		}
		ps = append(ps, netip.PrefixFrom(addr, l))
	}
	if err := r.delim(']', "the end of addr_info"); err != nil {
		return nil, err
	}
	return ps, nil
}

// version names the addresses of a family.
func version(family string) string {
	if family == "inet" {
		return "IPv4"
	}
	return "IPv6"
}

// IfAddrsText prints an interface's addresses as `ip -o addr show dev
// NAME` does, a line each ("7: kube-ipvs0    inet 10.96.0.1/32 scope
// global kube-ipvs0\       valid_lft forever preferred_lft forever"),
// for ParseIfAddrs to read back.
func IfAddrsText(index int, name string, addrs []netip.Prefix) string {
	var b strings.Builder
	for _, p := range addrs {
		if !p.IsValid() {
			continue
		}
		scope := "global"
		switch a := p.Addr(); {
		case a.IsLoopback():
			scope = "host"
		case a.IsLinkLocalUnicast():
			scope = "link"
		}
		if p.Addr().Is4() {
			// ip labels IPv4 addresses with their interface's name.
			fmt.Fprintf(&b, "%d: %s    inet %s scope %s %s\\       valid_lft forever preferred_lft forever\n", index, name, p, scope, name)
		} else {
			fmt.Fprintf(&b, "%d: %s    inet6 %s scope %s \\       valid_lft forever preferred_lft forever\n", index, name, p, scope)
		}
	}
	return b.String()
}
