package ipvs

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// ipAddr is `ip addr show` of a node in ipvs mode (iproute2 6.1), with
// a veth of a peer index and a point-to-point address.
const ipAddr = `1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
    inet 10.0.0.1 peer 10.0.0.2/32 scope global lo
       valid_lft forever preferred_lft forever
    inet6 ::1/128 scope host 
       valid_lft forever preferred_lft forever
3: eth0@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400 qdisc pfifo_fast state UP group default qlen 1000
    link/ether 02:fc:00:00:00:01 brd ff:ff:ff:ff:ff:ff link-netnsid 0
    altname enp0s3
    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0
       valid_lft forever preferred_lft forever
    inet6 fe80::fc:ff:fe00:1/64 scope link 
       valid_lft forever preferred_lft forever
4: ifb0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default qlen 32
    link/ether 22:62:ab:f8:ca:a4 brd ff:ff:ff:ff:ff:ff
5: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default 
    link/ether 6e:3c:aa:0b:19:4e brd ff:ff:ff:ff:ff:ff
    inet 10.96.0.1/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet 10.96.0.10/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet6 fd00::1/128 scope global 
       valid_lft forever preferred_lft forever
`

// ipAddrOneLine is ip -o addr show of the same node.
const ipAddrOneLine = `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
1: lo    inet 10.0.0.1 peer 10.0.0.2/32 scope global lo\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \       valid_lft forever preferred_lft forever
3: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\       valid_lft forever preferred_lft forever
3: eth0    inet6 fe80::fc:ff:fe00:1/64 scope link \       valid_lft forever preferred_lft forever
5: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
5: kube-ipvs0    inet 10.96.0.10/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
5: kube-ipvs0    inet6 fd00::1/128 scope global \       valid_lft forever preferred_lft forever
`

// ipAddrJSON is ip -j addr show of the same node, with the empty
// objects ip prints for what a filter leaves out.
const ipAddrJSON = `[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue","operstate":"UNKNOWN","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host","label":"lo","valid_life_time":4294967295,"preferred_life_time":4294967295},{"family":"inet","local":"10.0.0.1","address":"10.0.0.2","prefixlen":32,"scope":"global","label":"lo","valid_life_time":4294967295,"preferred_life_time":4294967295},{"family":"inet6","local":"::1","prefixlen":128,"scope":"host","valid_life_time":4294967295,"preferred_life_time":4294967295}]},{},
{"ifindex":3,"link_index":4,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1400,"link_type":"ether","address":"02:fc:00:00:00:01","altnames":["enp0s3"],"addr_info":[{"family":"inet","local":"192.0.2.2","prefixlen":24,"broadcast":"192.0.2.255","scope":"global","label":"eth0","valid_life_time":4294967295,"preferred_life_time":4294967295},{},{"family":"inet6","local":"fe80::fc:ff:fe00:1","prefixlen":64,"scope":"link","valid_life_time":4294967295,"preferred_life_time":4294967295}]},
{"ifindex":4,"ifname":"ifb0","flags":["BROADCAST","NOARP"],"mtu":1500,"addr_info":[]},
{
    "ifindex": 5,
    "ifname": "kube-ipvs0",
    "flags": [ "BROADCAST","NOARP" ],
    "addr_info": [ {
            "family": "inet",
            "local": "10.96.0.1",
            "prefixlen": 32,
            "scope": "global",
            "label": "kube-ipvs0",
            "valid_life_time": 4294967295,
            "preferred_life_time": 4294967295
        },{
            "family": "inet",
            "local": "10.96.0.10",
            "prefixlen": 32
        },{
            "family": "inet6",
            "local": "fd00::1",
            "prefixlen": 128
        } ]
}]
`

func prefixes(ss ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range ss {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

// TestParseIfAddrs reads the three forms of the same node to the same
// addresses, in order, with their lengths; an interface's peer index
// left out of its name.
func TestParseIfAddrs(t *testing.T) {
	want := map[string][]netip.Prefix{
		"lo":         prefixes("127.0.0.1/8", "10.0.0.1/32", "::1/128"),
		"eth0":       prefixes("192.0.2.2/24", "fe80::fc:ff:fe00:1/64"),
		"ifb0":       nil,
		"kube-ipvs0": prefixes("10.96.0.1/32", "10.96.0.10/32", "fd00::1/128"),
	}
	for form, text := range map[string]string{"text": ipAddr, "JSON": ipAddrJSON, "CRLF": strings.ReplaceAll(ipAddr, "\n", "\r\n")} {
		got, err := ParseIfAddrs(text)
		if err != nil {
			t.Errorf("%s: %v", form, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", form, got, want)
		}
	}
	// ip -o shows no interface without an address.
	delete(want, "ifb0")
	got, err := ParseIfAddrs(ipAddrOneLine)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("one-line form: %v %v\nwant %v", got, err, want)
	}
	if got, err := ParseIfAddrs(""); err != nil || len(got) != 0 {
		t.Errorf("nothing: %v %v", got, err)
	}
}

// TestParseIfAddrsErrors names the line and column of what is wrong.
func TestParseIfAddrsErrors(t *testing.T) {
	cases := []parseErrorCase{
		{"bad address", "5: kube-ipvs0: <NOARP>\n    inet 10.96.0.300/32 scope global kube-ipvs0\n", 2, 10, `"10.96.0.300/32": want an IPv4 address`},
		{"IPv6 after inet", "5: kube-ipvs0: <NOARP>\n    inet fd00::1/128 scope global\n", 2, 10, "want an IPv4 address"},
		{"IPv4 after inet6", "5: kube-ipvs0: <NOARP>\n\tinet6 10.0.0.1/32\n", 2, 8, "want an IPv6 address"},
		{"prefix too long", "5: kube-ipvs0: <NOARP>\n    inet 10.96.0.1/33 scope global\n", 2, 10, "want a prefix length from 0 to 32"},
		{"address before interface", "    inet 10.96.0.1/32\n", 1, 5, "an address before any interface"},
		{"not an interface", "5: kube-ipvs0: <NOARP>\nDevice \"x\" does not exist.\n", 2, 1, `"Device": want an interface's index`},
		{"one-line, bad address", ipAddrOneLine + "5: kube-ipvs0    inet 10.96.0.x/32 scope global\n", 9, 23, `"10.96.0.x/32"`},
		{"one-line, no address", "5: kube-ipvs0    mtu 1500\n", 1, 14, "want inet or inet6"},
		{"JSON: bad address", `[{"ifname":"kube-ipvs0","addr_info":[{"family":"inet","local":"10.96.0.300","prefixlen":32}]}]`, 1, 63, `local "10.96.0.300": want an IPv4 address`},
		{"JSON: bad length", "[{\"ifname\":\"kube-ipvs0\",\n  \"addr_info\":[{\"family\":\"inet6\",\"local\":\"fd00::1\",\"prefixlen\":129}]}]", 2, 64, `prefixlen "129": want a number from 0 to 128`},
		{"JSON: length a string", `[{"ifname":"a","addr_info":[{"family":"inet","local":"10.0.0.1","prefixlen":"x"}]}]`, 1, 77, "prefixlen: want a number"},
		{"JSON: syntax", "[{\"ifname\":\"a\",\n \"addr_info\": [x]}]", 2, 16, "JSON: invalid character 'x'"},
		{"JSON: cut", "[{\"ifname\":\"a\",\n \"addr_info\": [{\"family\":\"inet\"", 2, 31, "the JSON ends"},
		{"JSON: an object", `{"ifname":"a"}`, 1, 1, "want an array of interfaces"},
		{"JSON: ifname a number", `[{"ifname":5}]`, 1, 12, "ifname: want a string"},
		{"JSON: addresses without ifname", `[{"addr_info":[{"family":"inet","local":"10.0.0.1","prefixlen":8}]}]`, 1, 2, "without ifname"},
		{"JSON: text after", "[]\nx", 2, 1, "text after the array"},
	}
	wantParseErrors(t, cases, func(text string) error {
		_, err := ParseIfAddrs(text)
		return err
	})
}

// TestIfAddrsText prints as ip -o addr show does, and reads back.
func TestIfAddrsText(t *testing.T) {
	addrs := prefixes("10.96.0.1/32", "10.96.0.10/32", "fd00::1/128", "fe80::1/64")
	got := IfAddrsText(7, "kube-ipvs0", addrs)
	want := `7: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
7: kube-ipvs0    inet 10.96.0.10/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
7: kube-ipvs0    inet6 fd00::1/128 scope global \       valid_lft forever preferred_lft forever
7: kube-ipvs0    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever
`
	if got != want {
		t.Errorf("IfAddrsText:\n%s\nwant:\n%s", got, want)
	}
	back, err := ParseIfAddrs(got)
	if err != nil || !reflect.DeepEqual(back, map[string][]netip.Prefix{"kube-ipvs0": addrs}) {
		t.Errorf("read back: %v %v", back, err)
	}
	if got := IfAddrsText(7, "kube-ipvs0", nil); got != "" {
		t.Errorf("no addresses: %q", got)
	}
}

// FuzzParseIfAddrs reads anything without a panic, each error with its
// position, and what it reads back from ip's forms printed again: the
// one-line form (IfAddrsText) and the header form (ipAddrShow), a name
// with a colon or an @ of its own included.
func FuzzParseIfAddrs(f *testing.F) {
	for _, s := range []string{ipAddr, ipAddrOneLine, ipAddrJSON, "[]", "[{}]", "0: 00::\n inet6 ::", "3: c@d@a@b: <UP>\n    inet6 ::1/128\n"} {
		f.Add(s)
	}
	for _, name := range []string{"ip-addr-show.txt", "ip-o-addr-show.txt", "ip-j-addr-show.json"} {
		f.Add(ifaddrFile(f, name))
	}
	f.Fuzz(func(t *testing.T, text string) {
		ifs, err := ParseIfAddrs(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Col < 1 {
				t.Fatalf("error %v: want a *ParseError with a position", err)
			}
			return
		}
		for name, ps := range ifs {
			if strings.ContainsAny(name, " \t\r\n\v\f") || name == "" {
				continue // ip cannot show these
			}
			if len(ps) > 0 {
				back, err := ParseIfAddrs(IfAddrsText(1, name, ps))
				if err != nil || len(back) != 1 || !reflect.DeepEqual(back[name], ps) {
					t.Fatalf("%q %v: one-line form %q read back %v %v", name, ps, IfAddrsText(1, name, ps), back, err)
				}
			}
			for _, link := range []string{"", "@if9", "@eth0"} {
				if link != "@if9" && strings.Contains(name, "@") && !hasIPv4(ps) {
					continue // "a@b:" alone cannot tell a name from a link
				}
				shown := ipAddrShow(7, name, link, ps)
				back, err := ParseIfAddrs(shown)
				if got, ok := back[name]; err != nil || !ok || !reflect.DeepEqual(got, ps) {
					t.Fatalf("%q %v: header form %q read back %v %v", name, ps, shown, back, err)
				}
			}
		}
	})
}

// ipAddrShow prints an interface as ip addr show does: its header,
// with its link ("@if4") when it has one, and its addresses, an IPv4
// one's labelled with the interface's name.
func ipAddrShow(index int, name, link string, addrs []netip.Prefix) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d: %s%s: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group default qlen 1000\n", index, name, link)
	b.WriteString("    link/ether 02:fc:00:00:00:01 brd ff:ff:ff:ff:ff:ff\n")
	for _, p := range addrs {
		if p.Addr().Is4() {
			fmt.Fprintf(&b, "    inet %s scope global %s\n", p, name)
		} else {
			fmt.Fprintf(&b, "    inet6 %s scope global \n", p)
		}
		b.WriteString("       valid_lft forever preferred_lft forever\n")
	}
	return b.String()
}

func hasIPv4(ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Addr().Is4() {
			return true
		}
	}
	return false
}
