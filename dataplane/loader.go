package dataplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// Loader reads one kind of data plane out of a node's dumps. Each plane
// package under plugins/ has one, and plugins.Loaders lists them: that
// list is the only place svctrace names its planes.
type Loader interface {
	// Mode is the kube-proxy mode the plane serves ("iptables").
	Mode() string
	// Wants says which dump the plane reads, for messages: "an IPv4
	// iptables dump".
	Wants(family string) string
	// Load parses the node's dumps of this plane for one IP family. A
	// nil Plane (and no error) means the node holds none.
	Load(ns *snapshot.NodeState, family string) (Plane, error)
}

// NarrowLoader is a Loader that can read a state for a narrowed analysis
// (one Service's frontends, of thousands): the plane may leave the parts of
// the dumps no walk enters unparsed until something asks for them. The
// answers are the same as Load's; an error in a part read late is told by
// the plane's Deferred.Err once the walks are done.
type NarrowLoader interface {
	Loader
	LoadNarrow(ns *snapshot.NodeState, family string) (Plane, error)
}

// DumpIndexer is a Loader that indexes the dumps it reads when they are
// collected, so that a narrowed read of them later (NarrowLoader) skips what
// the index tells. The index is the plane's own (opaque to the rest of
// svctrace), kept beside its dump in a binary snapshot
// (snapshot.Dump.Index); a read with it answers as a read without it.
type DumpIndexer interface {
	Loader
	// IndexDump returns the index of d, one of the dumps of ns; nil when
	// the plane does not read or does not index it.
	IndexDump(ns *snapshot.NodeState, d *snapshot.Dump) ([]byte, error)
}

// Deferred is a plane read by LoadNarrow: parts of its dumps are parsed when
// first used.
type Deferred interface {
	// Err is the first error found in a part of the dumps parsed late
	// (nil: none so far), naming the dump and the position.
	Err() error
}

// DumpError is an error in one dump of a node's state; it names the node,
// the dump and, where the parser gives one, the position.
type DumpError struct {
	msg string
	err error
}

func (e *DumpError) Error() string { return e.msg }
func (e *DumpError) Unwrap() error { return e.err }

// NewDumpError says where err is: "node node1: iptables-save dump line 12
// col 5: …", or FILE:12:5 for a dump imported from a file. line 0 means the
// parser gave no position, and err is said as it is.
func NewDumpError(node string, d *snapshot.Dump, line, col int, msg string, err error) error {
	if line == 0 {
		return &DumpError{msg: fmt.Sprintf("node %s: %s dump: %v", node, d.Collector, err), err: err}
	}
	where := fmt.Sprintf("line %d col %d", line, col)
	if d.Origin != "" {
		where = fmt.Sprintf("%s:%d:%d", d.Origin, line, col)
	}
	return &DumpError{msg: fmt.Sprintf("node %s: %s dump %s: %s", node, d.Collector, where, msg), err: err}
}

// Origin names a dump for a parser's messages: its file, else the node and
// the collector.
func Origin(node string, d *snapshot.Dump) string {
	if d.Origin != "" {
		return d.Origin
	}
	return fmt.Sprintf("node %s %s dump", node, d.Collector)
}

// KernelReader is a Loader that reads its part of a live node's kernel
// state itself, faster than the tool whose dump it stands for: collecting
// a node uses it in the tool's place, and falls back to the tool when it
// fails.
type KernelReader interface {
	Loader
	// ReadKernel reads the state of the calling thread's network namespace
	// as the dump of collector would hold it: its Text, and Parsed for the
	// plane's own loader. An error means the tool reads it instead: with
	// an empty Dump, the reader does not stand for that collector; with
	// the Dump's Collector set, it does and failed (state it does not
	// translate, a kernel without it), which a note may tell. backend is
	// the iptables backend the tool dumps ("legacy", "nf_tables"), or "".
	ReadKernel(collector, backend string) (snapshot.Dump, error)
}

// RepeatedReader is a KernelReader that reads faster for a caller that
// reads the same network namespace again and again (the node agent):
// Repeated gives that caller a reader of its own, which may keep from one
// of its reads to the next what the kernel guarantees cannot have changed
// in between. Its reads answer exactly as the plane's ReadKernel.
type RepeatedReader interface {
	KernelReader
	Repeated() KernelReader
}

// KernelWatcher is a Loader that can tell when the kernel state it reads
// changes, at little cost: WatchKernel calls changed (which must not
// block) soon after each change in the calling thread's network namespace,
// until ctx ends, and returns nil then; an error says why it cannot
// watch (or stopped). A node agent checks the node when told, instead of
// waiting for its period.
type KernelWatcher interface {
	WatchKernel(ctx context.Context, changed func()) error
}

// KernelFingerprinter is a Loader that can tell, at a small part of a
// read's cost, whether the kernel state it reads changed: a digest of that
// state in the calling thread's network namespace, where two equal digests
// taken by one process mean the same state. A digest taken just before a
// read vouches for what the read found while the digest stays the same. An
// error says it cannot tell (a state it has no digest of).
type KernelFingerprinter interface {
	KernelFingerprint(ctx context.Context) ([]byte, error)
}

// ReadFingerprinter is a reader (a RepeatedReader's) whose reads take the
// plane's digest (KernelFingerprinter) of the very state they read, for a
// caller that keeps a digest of every state it reads: ReadFingerprint is
// that digest for the reads made since its last call, the bytes
// KernelFingerprint gives while the state stays as read; an error when
// those reads did not read all the state the digest covers.
type ReadFingerprinter interface {
	ReadFingerprint() ([]byte, error)
}

// ErrNotInKernel is what a KernelReader's read wraps when the kernel has
// none of the state it reads (IPVS not loaded): there is no dump to take,
// which is no error, and no tool need be tried instead.
var ErrNotInKernel = errors.New("not in this kernel")

// Unchecked is a plane whose behaviour cannot yet be held against what
// kube-proxy should have programmed (its walk leaves out part of the
// mode's data path): Unchecked says why. Its paths are explained and
// traced; drift refuses to answer for it rather than answer wrong.
type Unchecked interface {
	Unchecked() string
}

// Excerpter is a plane read from part of a node's state (lines pasted in
// a ticket): Excerpt says why it is taken for an excerpt ("" for a whole
// state). What an excerpt lacks proves nothing: the plane reports only
// what it shows, and a drift check of it says so.
type Excerpter interface {
	Excerpt() string
}

// Causer is a plane that can tell causes of behaviour differences which
// are no trouble on their own: an IPVS real server at weight 0 is how an
// endpoint going away drains, but for a ready endpoint it is why that
// endpoint gets no traffic. Analysis keeps a cause only in the place of
// the differences it stands for: those of its frontends (all of them
// among its Frontends) and, when it names one, of its Endpoint.
type Causer interface {
	Causes(node string) []behavior.Finding
}

// Copies is a plane whose state holds a second copy of kube-proxy's rules
// that the kernel also runs (iptables' legacy and nf_tables backends):
// Other is that copy as a plane of its own, and its name; nil when there
// is none.
type Copies interface {
	Other() (Plane, string)
}
