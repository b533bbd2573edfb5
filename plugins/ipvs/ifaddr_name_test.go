package ipvs

import (
	"net/netip"
	"os"
	"reflect"
	"testing"
)

// ifaddrFile is a capture under testdata/ifaddr (see its README).
func ifaddrFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/ifaddr/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseIfAddrsNames reads real captures of interfaces whose names
// hold an @ (veth pairs "a@b" and "c@d", each the other's link, so ip's
// header shows "c@d@a@b"), a veth whose peer is in another namespace
// ("p@q@if3"), one with an alias label ("veth1:1"), and kube-ipvs0 with
// a link: each form gives every interface under its own name.
func TestParseIfAddrsNames(t *testing.T) {
	want := map[string][]netip.Prefix{
		"lo":         nil,
		"veth1":      prefixes("192.0.2.5/24", "192.0.2.6/24"),
		"c@d":        prefixes("198.51.100.10/32"),
		"a@b":        prefixes("198.51.100.9/24", "fd00::9/64"),
		"p@q":        prefixes("fd00::11/128"),
		"g@h":        prefixes("fd00::13/128"),
		"e@f":        prefixes("fd00::12/128"),
		"k0":         nil,
		"kube-ipvs0": prefixes("10.96.0.1/32"),
	}
	for _, file := range []string{"ip-addr-show.txt", "ip-j-addr-show.json", "ip-o-addr-show.txt"} {
		if file == "ip-o-addr-show.txt" {
			// ip -o shows no interface without an address.
			delete(want, "lo")
			delete(want, "k0")
		}
		got, err := ParseIfAddrs(ifaddrFile(t, file))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v\n got %v\nwant %v", file, err, got, want)
		}
	}
}

// TestParseIfAddrsColon: a name that ends in a colon is told from a
// header by what follows it, in both forms (found by fuzzing).
func TestParseIfAddrsColon(t *testing.T) {
	for text, want := range map[string]map[string][]netip.Prefix{
		"0: 00:    inet6 ::/128 scope global \\       valid_lft forever preferred_lft forever\n": {"00:": prefixes("::/128")},
		"0: 00:: <UP>\n    inet6 ::/128 scope global \n":                                         {"00:": prefixes("::/128")},
		"2: eth0:1    inet 192.0.2.7/24 scope global eth0:1\\\n":                                 {"eth0:1": prefixes("192.0.2.7/24")},
		"2: eth0:1@if4: <UP>\n    inet 192.0.2.7/24 scope global eth0:1\n":                       {"eth0:1": prefixes("192.0.2.7/24")},
	} {
		got, err := ParseIfAddrs(text)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v %v, want %v", text, got, err, want)
		}
	}
}
