package iptables

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// saveRule builds one rule in the form iptables-save prints it: the
// generic matches first (-s, -d, -i, -p), then each -m module in the order
// kube-proxy gives them, then the target. A rule written in this form and
// read back from the kernel is the same text, so a rendered layout and a
// dump compare line by line.
type saveRule struct {
	chain string
	src   string // "" or "[! ]CIDR"
	dst   string
	in    string // "" or "[! ]IFACE"
	proto string
	mods  []string
	jump  string
	// err is a string option the rule could not quote: the rule may not
	// be written.
	err error
}

func rule(chain string) *saveRule { return &saveRule{chain: chain} }

// from sets -s; a leading "!" negates it.
func (r *saveRule) from(addr string) *saveRule { r.src = addr; return r }

func (r *saveRule) to(addr string) *saveRule { r.dst = addr; return r }

func (r *saveRule) iface(in string) *saveRule { r.in = in; return r }

// comment adds -m comment, quoted as iptables-save quotes it.
func (r *saveRule) comment(c string) *saveRule {
	return r.mod("comment --comment" + r.quote(c))
}

// nfacct adds -m nfacct with the counter's name.
func (r *saveRule) nfacct(name string) *saveRule {
	// iptables-save prints a blank more before the name.
	return r.mod("nfacct --nfacct-name " + r.quote(name))
}

// quote is saveString, keeping its refusal in the rule.
func (r *saveRule) quote(s string) string {
	q, err := saveString(s)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("chain %s: %w", r.chain, err)
	}
	return q
}

// port adds "-p proto" and "-m proto --dport N", as kube-proxy writes
// "-m proto -p proto ... --dport N".
func (r *saveRule) port(proto string, port int32) *saveRule {
	r.proto = proto
	return r.mod(proto + " --dport " + strconv.Itoa(int(port)))
}

func (r *saveRule) mod(m string) *saveRule { r.mods = append(r.mods, m); return r }

func (r *saveRule) target(t string) *saveRule { r.jump = t; return r }

func (r *saveRule) String() string {
	var b strings.Builder
	b.WriteString("-A ")
	b.WriteString(r.chain)
	generic := func(flag, v string) {
		if v == "" {
			return
		}
		if rest, neg := strings.CutPrefix(v, "!"); neg {
			b.WriteString(" ! " + flag + " " + strings.TrimSpace(rest))
			return
		}
		b.WriteString(" " + flag + " " + v)
	}
	generic("-s", r.src)
	generic("-d", r.dst)
	generic("-i", r.in)
	generic("-p", r.proto)
	for _, m := range r.mods {
		b.WriteString(" -m ")
		b.WriteString(m)
	}
	if r.jump != "" {
		b.WriteString(" -j ")
		b.WriteString(r.jump)
	}
	return b.String()
}

// maxSaveString is the longest string option iptables takes (the
// comment match's, 256 bytes with its terminating NUL).
const maxSaveString = 255

// saveString is how iptables-save prints a string option (with its leading
// space): bare when it is only letters, digits, '_' and '-', else quoted
// with '"', '\” and '\\' escaped. A string iptables-restore cannot read
// back as the same one is refused: a control character (a newline would
// end the rule, a NUL the line), bytes that are not UTF-8, or more than
// iptables keeps.
func saveString(s string) (string, error) {
	if len(s) > maxSaveString {
		return "", fmt.Errorf("string option %q is longer than the %d bytes iptables keeps: refusing to write it", s, maxSaveString)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("string option %q is not UTF-8: refusing to write it", s)
	}
	bare := s != ""
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return "", fmt.Errorf("string option %q holds a control character iptables-restore cannot read back: refusing to write it", s)
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			bare = false
		}
	}
	if bare {
		return " " + s, nil
	}
	var b strings.Builder
	b.WriteString(` "`)
	for _, c := range s {
		if c == '"' || c == '\\' || c == '\'' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// probability is how iptables-save prints the statistic match kube-proxy
// writes for the i-th of n endpoints: kube-proxy gives 1/n with ten
// decimals, iptables stores it as a fraction of 2^31, and prints that back
// with eleven.
func probability(n int) string {
	written, _ := strconv.ParseFloat(fmt.Sprintf("%0.10f", 1.0/float64(n)), 64)
	stored := math.Round(float64(0x80000000) * written)
	return fmt.Sprintf("%.11f", stored/float64(0x80000000))
}

// hostPrefix is an address as a one-address prefix ("10.0.0.1/32").
func hostPrefix(ip string, family string) string {
	if family == "IPv6" {
		return ip + "/128"
	}
	return ip + "/32"
}
