package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/svctrace/svctrace/conntrack"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// LocalOptions tune CollectLocal.
type LocalOptions struct {
	// ConntrackLimit bounds the conntrack entries kept (0: the default,
	// DefaultConntrackLimit).
	ConntrackLimit int
	// ConntrackDst, when set, keeps only conntrack entries whose original
	// destination is one of these (the Services' addresses and the node's
	// own), filtered in the kernel where it can.
	ConntrackDst []netip.Addr
	// Rules, when set, gives the rules ReadRules started reading (while
	// the caller listed the API objects) instead of reading them now.
	Rules func() Rules
	// OnRead, when set, is told of each part of the state read: the
	// node agent reports each one's success and duration.
	OnRead func(Read)
}

// Read is how one part of a node's state was read: its collector (the
// dump's, with the backend for iptables: "iptables-save/legacy"), how
// long it took, and its error; a tool that is not installed is no read.
type Read struct {
	Collector string
	Duration  time.Duration
	Err       error
}

// DefaultConntrackLimit is how many conntrack entries a snapshot keeps.
const DefaultConntrackLimit = 100000

// Rules is the rule state of the network namespace the process runs in:
// the dumps of every tool installed, and what was not read.
type Rules struct {
	Dumps []snapshot.Dump
	Notes []string
	Err   error
	// Reads are the reads made, in the order of the dump tools.
	Reads []Read
	// Fingerprint, for a RuleReader's read, is KernelFingerprint of the
	// state read: nil when it cannot be told.
	Fingerprint []byte
}

// dumpCommand is one tool that dumps rules; what names what it reads.
type dumpCommand struct {
	collector, family, backend, what string
	argv                             []string
	// optional: the tool failing is a note, not an error (ipset fails
	// where the kernel has no ipset support, on nodes that need none).
	optional bool
}

// dumpCommands are the tools that dump a node's rules, as the planes
// declare them (plugins.Dumps).
func dumpCommands() []dumpCommand {
	var out []dumpCommand
	for _, k := range plugins.Dumps() {
		for _, t := range k.Tools {
			out = append(out, dumpCommand{collector: k.Collector, family: k.Family, backend: t.Backend, what: t.What, argv: t.Argv, optional: k.Optional})
		}
	}
	return out
}

// ReadRules starts reading the rules of this network namespace, every dump
// tool at once, and returns the function that waits for them: a caller
// lists the API objects meanwhile.
func ReadRules(ctx context.Context) func() Rules {
	return (&RuleReader{readers: kernelReaders(false)}).Read(ctx)
}

// A RuleReader reads the rules of the network namespace the process runs
// in again and again (the node agent): the planes that read the kernel
// themselves may keep, from one of its reads to the next, what cannot have
// changed in between (dataplane.RepeatedReader). Its reads answer as
// ReadRules does. One read at a time.
type RuleReader struct {
	readers []dataplane.KernelReader
	// prints take the kernel's fingerprint for each read (Rules.Fingerprint);
	// none for ReadRules.
	prints []planePrint
}

// NewRuleReader returns a reader for repeated reads.
func NewRuleReader() *RuleReader {
	rs := kernelReaders(true)
	return &RuleReader{readers: rs, prints: planePrints(rs)}
}

// kernelReaders are the planes that read the kernel themselves; repeated
// gives those that can their reader for repeated reads.
func kernelReaders(repeated bool) []dataplane.KernelReader {
	var readers []dataplane.KernelReader
	for _, l := range plugins.Loaders() {
		r, ok := l.(dataplane.KernelReader)
		if !ok {
			continue
		}
		if rr, ok := r.(dataplane.RepeatedReader); ok && repeated {
			r = rr.Repeated()
		}
		readers = append(readers, r)
	}
	return readers
}

// Read starts a read, as ReadRules does.
func (rr *RuleReader) Read(ctx context.Context) func() Rules {
	before, err := rr.fingerprintBefore(ctx)
	cmds := dumpCommands()
	results := make([]chan dumpResult, len(cmds))
	for i, c := range cmds {
		results[i] = make(chan dumpResult, 1)
		go func() {
			start := time.Now()
			res := readKernel(ctx, rr.readers, c)
			res.took = time.Since(start)
			results[i] <- res
		}()
	}
	return func() Rules {
		var r Rules
		found := 0
		for i := range cmds {
			x := <-results[i]
			switch {
			case x.err != nil && r.Err == nil:
				r.Err = x.err
			case x.note != "":
				r.Notes = append(r.Notes, x.note)
			}
			if x.dump != nil {
				r.Dumps = append(r.Dumps, *x.dump)
			}
			if x.installed {
				found++
				r.Reads = append(r.Reads, Read{Collector: cmds[i].name(), Duration: x.took, Err: x.err})
			}
		}
		if r.Err == nil && found == 0 {
			r.Err = fmt.Errorf("neither iptables-save nor nft found (install iptables and nftables)")
		}
		if err == nil && r.Err == nil {
			r.Fingerprint = rr.fingerprintAfter(before)
		}
		return r
	}
}

// dumpResult is what one dump tool gave: its dump, or a note on why there
// is none, or an error.
type dumpResult struct {
	dump      *snapshot.Dump
	note      string
	installed bool
	err       error
	took      time.Duration
}

// name names the command's read: its collector, and the backend for an
// iptables dump.
func (c dumpCommand) name() string {
	if c.backend == "" {
		return c.collector
	}
	return c.collector + "/" + c.backend
}

// runDump runs one dump tool. A tool not installed, or a legacy backend the
// kernel lacks, gives a note; a tool that fails, an error.
func runDump(ctx context.Context, c dumpCommand) dumpResult {
	bin := c.argv[0]
	path, err := exec.LookPath(bin)
	if err != nil {
		return dumpResult{note: fmt.Sprintf("%s not installed: %s was not read", bin, c.what)}
	}
	var out dumpOutput
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, path, c.argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	origin := strings.Join(c.argv, " ")
	if err := cmd.Run(); err != nil {
		if c.backend == "legacy" && strings.Contains(errb.String(), "Protocol not supported") {
			return dumpResult{installed: true, note: fmt.Sprintf("%s: the legacy backend is not available in this kernel", bin)}
		}
		if c.optional {
			return dumpResult{installed: true, note: fmt.Sprintf("%s failed (%v: %s): %s was not read", origin, err, strings.TrimSpace(errb.String()), c.what)}
		}
		return dumpResult{installed: true, err: fmt.Errorf("running %s: %v: %s", origin, err, strings.TrimSpace(errb.String()))}
	}
	return dumpResult{installed: true, dump: &snapshot.Dump{Collector: c.collector, Family: c.family, Backend: c.backend, Origin: origin, Text: out.String()}}
}

// readKernel reads a dump with the data plane that reads that part of the
// kernel's state itself (nftables over netlink: in half the time of nft,
// and already parsed), and with the tool where none does or it fails.
func readKernel(ctx context.Context, readers []dataplane.KernelReader, c dumpCommand) dumpResult {
	var readErr error
	for _, r := range readers {
		d, err := r.ReadKernel(c.collector, c.backend)
		if err == nil {
			return dumpResult{installed: true, dump: &d}
		}
		if errors.Is(err, dataplane.ErrNotInKernel) {
			return dumpResult{} // nothing to read, and no tool would find more
		}
		if d.Collector != "" {
			readErr = err // it stands for the tool, and failed
		}
	}
	res := runDump(ctx, c)
	if res.dump == nil && res.note != "" && readErr != nil {
		res.note += fmt.Sprintf(" (reading it directly failed too: %v)", readErr)
	}
	return res
}

// CollectLocal reads the kernel state of the network namespace the process
// runs in: iptables dumps of both backends and families, the nftables
// ruleset as JSON, the conntrack entries to Services (bounded), and the
// local addresses. Tools that are not installed are noted, not fatal; a
// dump command that fails is an error.
func CollectLocal(ctx context.Context, node string, opts LocalOptions) (snapshot.NodeState, []string, error) {
	ns := snapshot.NodeState{Name: node, CapturedAt: time.Now().UTC()}
	wait := opts.Rules
	if wait == nil {
		wait = ReadRules(ctx)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		wait()
		return ns, nil, fmt.Errorf("listing local addresses: %w", err)
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
	// The conntrack table is read while the rules are.
	type ctResult struct {
		dump snapshot.Dump
		note string
		err  error
		took time.Duration
	}
	ctDone := make(chan ctResult, 1)
	go func() {
		start := time.Now()
		var r ctResult
		r.dump, r.note, r.err = collectConntrack(ctx, opts)
		r.took = time.Since(start)
		ctDone <- r
	}()
	rules := wait()
	ct := <-ctDone
	if opts.OnRead != nil {
		for _, r := range rules.Reads {
			opts.OnRead(r)
		}
		opts.OnRead(Read{Collector: snapshot.CollectorConntrack, Duration: ct.took, Err: ct.err})
	}
	notes := rules.Notes
	if rules.Err != nil {
		return ns, notes, rules.Err
	}
	ns.Dumps = rules.Dumps
	if ct.err != nil {
		return ns, notes, ct.err
	}
	ns.Dumps = append(ns.Dumps, ct.dump)
	if ct.note != "" {
		notes = append(notes, ct.note)
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
