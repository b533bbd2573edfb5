package ipvs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// The sections of ipvs mode's state in a backup, each headed by a line
// "### " and the tool whose text it holds.
const (
	sectionIPVS     = "ipvsadm -Ln"
	sectionIPSet    = "ipset save"
	sectionAddrs    = "ip addr show dev " + Dummy
	sectionIPTables = "iptables-save"
)

// kernelText reads ipvs mode's state from the kernel, in sections: the
// IPVS table (over netlink, as ipvsadm -Ln prints it), the ipsets (ipset
// save), kube-ipvs0's addresses and the iptables rules of the family and
// backend.
func kernelText(ctx context.Context, family, backend string) (string, error) {
	var b strings.Builder
	t, err := readNetlink()
	if err != nil {
		return "", err
	}
	if t == nil {
		t = &Table{}
	}
	section(&b, sectionIPVS, t.Listing())
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ipset", "save")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ipset save: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	section(&b, sectionIPSet, out.String())
	addrs, err := readDummy()
	if err != nil && !errors.Is(err, dataplane.ErrNotInKernel) {
		return "", err
	}
	section(&b, sectionAddrs, addrs.Text)
	rules, err := iptables.SaveKernel(ctx, backend, family)
	if err != nil {
		return "", err
	}
	section(&b, sectionIPTables+" ("+backend+")", rules)
	return b.String(), nil
}

func section(b *strings.Builder, name, text string) {
	b.WriteString("### " + name + "\n" + text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
}

// kernelState reads ipvs mode's state of a family from the kernel.
func kernelState(ctx context.Context, family, backend string) (*State, error) {
	text, err := kernelText(ctx, family, backend)
	if err != nil {
		return nil, err
	}
	return parseText(family, text)
}

// parseText reads the sections of kernelText (a backup's) as the state
// of a family.
func parseText(family, text string) (*State, error) {
	parts := map[string]string{}
	name := ""
	var seen []string
	for _, line := range strings.SplitAfter(text, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			name = strings.TrimSpace(h)
			if strings.HasPrefix(name, sectionIPTables+" ") {
				name = sectionIPTables
			}
			seen = append(seen, name)
			continue
		}
		if name == "" && strings.TrimSpace(line) != "" {
			return nil, fmt.Errorf("%q is before any section", strings.TrimSpace(line))
		}
		parts[name] += line
	}
	for _, want := range []string{sectionIPVS, sectionIPSet, sectionAddrs, sectionIPTables} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			return nil, fmt.Errorf("no section %q", want)
		}
	}
	st := &State{}
	t, err := Parse(parts[sectionIPVS])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sectionIPVS, err)
	}
	for _, v := range t.Virtuals {
		if v.Protocol != "" && v.Addr.Addr().Is4() == (family == "IPv4") {
			st.Virtuals = append(st.Virtuals, v)
		}
	}
	if st.Sets, err = ParseIPSets(parts[sectionIPSet]); err != nil {
		return nil, fmt.Errorf("%s: %w", sectionIPSet, err)
	}
	ifs, err := ParseIfAddrs(parts[sectionAddrs])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sectionAddrs, err)
	}
	for _, a := range ifs[Dummy] {
		if a.Addr().Is4() == (family == "IPv4") {
			st.Addrs = append(st.Addrs, a)
		}
	}
	if st.Rules, err = iptables.ReadOwnedLayout(family, parts[sectionIPTables], Ownership); err != nil {
		return nil, fmt.Errorf("%s: %w", sectionIPTables, err)
	}
	return st, nil
}
