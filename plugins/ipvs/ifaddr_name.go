package ipvs

import (
	"net/netip"
	"strings"
)

// shownIf is what ip's text says of one interface, under the name it
// shows: a header's "name@link" is only read as a name at the end, when
// every interface is known.
type shownIf struct {
	shown  string
	header bool
	addrs  []netip.Prefix
	// labels are its IPv4 addresses' labels, each the interface's name
	// or an alias of it ("eth0:1").
	labels []string
}

// shownIfs are the interfaces of a text, in the order first shown.
type shownIfs struct {
	list []*shownIf
	at   map[shownKey]*shownIf
}

type shownKey struct {
	shown  string
	header bool
}

// get is the interface shown as name, in a header or the one-line form.
func (s *shownIfs) get(name string, header bool) *shownIf {
	k := shownKey{name, header}
	if f := s.at[k]; f != nil {
		return f
	}
	if s.at == nil {
		s.at = map[shownKey]*shownIf{}
	}
	f := &shownIf{shown: name, header: header}
	s.at[k] = f
	s.list = append(s.list, f)
	return f
}

// byName are the addresses of each interface by its name: a header's
// link left out of it.
func (s *shownIfs) byName() map[string][]netip.Prefix {
	// Names an interface may have: a link is one of them, or another
	// namespace's ("if4").
	names := map[string]bool{}
	for _, f := range s.list {
		names[f.shown] = true
		for i := range len(f.shown) {
			if f.header && i > 0 && f.shown[i] == '@' {
				names[f.shown[:i]] = true
			}
		}
	}
	ifs := make(map[string][]netip.Prefix, len(s.list))
	for _, f := range s.list {
		name := f.shown
		if f.header {
			name = headerName(f, names)
		}
		ifs[name] = append(ifs[name], f.addrs...)
	}
	return ifs
}

// headerName is the name in an interface's header, "name" or
// "name@link" (a veth's "eth0@if4", a VLAN's "vlan10@eth0"). A name may
// hold an @ itself ("a@b@if4"), so the split is chosen by what tells:
// the label of an IPv4 address, which starts with the name; else a link
// in another namespace ("if" and its index) or one of the interfaces
// shown; else the last @. Only the last is a guess: an interface named
// "a@b" with no link and no IPv4 address reads as "a".
func headerName(f *shownIf, names map[string]bool) string {
	var at []int // the @s that may end the name, last first
	for i := len(f.shown) - 1; i > 0; i-- {
		if f.shown[i] == '@' {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return f.shown
	}
	for _, l := range f.labels {
		// The whole of it first: a name with an @ and no link.
		for _, i := range append([]int{len(f.shown)}, at...) {
			if name := f.shown[:i]; l == name || strings.HasPrefix(l, name+":") {
				return name
			}
		}
	}
	for _, i := range at {
		if link := f.shown[i+1:]; isOtherNetnsLink(link) || link == "NONE" || names[link] {
			return f.shown[:i]
		}
	}
	return f.shown[:at[0]]
}

// isOtherNetnsLink reports whether a header's link is how ip shows one
// in another network namespace: "if" and its index.
func isOtherNetnsLink(link string) bool {
	digits, ok := strings.CutPrefix(link, "if")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
