package inspect

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/svctrace/svctrace/plugins/conntrack"
	"github.com/svctrace/svctrace/snapshot"
)

// saveCommands are the dump commands per family and backend. The plain
// iptables-save is whatever backend the alternatives system points at; the
// -nft and -legacy variants name theirs.
var saveCommands = []struct {
	collector, family, backend, bin string
}{
	{snapshot.CollectorIPTablesSave, "IPv4", "nf_tables", "iptables-nft-save"},
	{snapshot.CollectorIPTablesSave, "IPv4", "legacy", "iptables-legacy-save"},
	{snapshot.CollectorIP6TablesSave, "IPv6", "nf_tables", "ip6tables-nft-save"},
	{snapshot.CollectorIP6TablesSave, "IPv6", "legacy", "ip6tables-legacy-save"},
}

// LocalOptions tune CollectLocal.
type LocalOptions struct {
	// ConntrackLimit bounds the conntrack entries kept (0: the default,
	// DefaultConntrackLimit).
	ConntrackLimit int
	// ConntrackDst, when set, keeps only conntrack entries whose original
	// destination is one of these (the Services' addresses and the node's
	// own), filtered in the kernel where it can.
	ConntrackDst []netip.Addr
}

// DefaultConntrackLimit is how many conntrack entries a snapshot keeps.
const DefaultConntrackLimit = 100000

// CollectLocal reads the kernel state of the network namespace the process
// runs in: iptables dumps of both backends and families, the nftables
// ruleset as JSON, the conntrack entries to Services (bounded), and the
// local addresses. Tools that are not installed are noted, not fatal; a
// dump command that fails is an error.
func CollectLocal(ctx context.Context, node string, opts LocalOptions) (snapshot.NodeState, []string, error) {
	ns := snapshot.NodeState{Name: node, CapturedAt: time.Now().UTC()}
	var notes []string
	found := 0
	for _, c := range saveCommands {
		path, err := exec.LookPath(c.bin)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s not installed: the %s %s backend was not read", c.bin, c.family, c.backend))
			continue
		}
		found++
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, path)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			if c.backend == "legacy" && strings.Contains(errb.String(), "Protocol not supported") {
				notes = append(notes, fmt.Sprintf("%s: the legacy backend is not available in this kernel", c.bin))
				continue
			}
			return ns, notes, fmt.Errorf("running %s: %v: %s", c.bin, err, strings.TrimSpace(errb.String()))
		}
		ns.Dumps = append(ns.Dumps, snapshot.Dump{Collector: c.collector, Family: c.family, Backend: c.backend, Origin: c.bin, Text: out.String()})
	}
	if path, err := exec.LookPath("nft"); err != nil {
		notes = append(notes, "nft not installed: the nftables ruleset was not read")
	} else {
		found++
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, path, "-j", "list", "ruleset")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return ns, notes, fmt.Errorf("running nft -j list ruleset: %v: %s", err, strings.TrimSpace(errb.String()))
		}
		ns.Dumps = append(ns.Dumps, snapshot.Dump{Collector: snapshot.CollectorNFTJSON, Origin: "nft -j list ruleset", Text: out.String()})
	}
	if found == 0 {
		return ns, notes, fmt.Errorf("neither iptables-save nor nft found (install iptables and nftables)")
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ns, notes, fmt.Errorf("listing local addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			ns.Addresses = append(ns.Addresses, ipn.IP.String())
		}
	}
	if len(opts.ConntrackDst) > 0 {
		// NodePorts answer on every local address.
		for _, a := range ns.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				opts.ConntrackDst = append(opts.ConntrackDst, ip)
			}
		}
	}
	ct, note, err := collectConntrack(ctx, opts)
	if err != nil {
		return ns, notes, err
	}
	ns.Dumps = append(ns.Dumps, ct)
	if note != "" {
		notes = append(notes, note)
	}
	return ns, notes, nil
}

// collectConntrack streams the conntrack table into its text form, keeping
// at most the limit and saying so when more were there.
func collectConntrack(ctx context.Context, opts LocalOptions) (snapshot.Dump, string, error) {
	limit := opts.ConntrackLimit
	if limit <= 0 {
		limit = DefaultConntrackLimit
	}
	var b strings.Builder
	kept := 0
	stats, err := conntrack.Dump(ctx, conntrack.Filter{OrigDst: opts.ConntrackDst}, func(e conntrack.Entry) error {
		if kept < limit {
			b.WriteString(conntrack.Format(e))
			b.WriteByte('\n')
			kept++
		}
		return nil
	})
	if err != nil {
		return snapshot.Dump{}, "", fmt.Errorf("reading the conntrack table: %w", err)
	}
	d := snapshot.Dump{Collector: snapshot.CollectorConntrack, Origin: "conntrack (netlink)", Text: b.String()}
	note := ""
	if stats.Passed > kept {
		note = fmt.Sprintf("conntrack: %d entries to Services, the first %d kept (the snapshot's bound)", stats.Passed, kept)
	}
	return d, note, nil
}
