package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins"
)

// planePrint is how a RuleReader's read takes one plane's part of the
// kernel's fingerprint: from the plane's reader, of the very state it read
// (dataplane.ReadFingerprinter), or from the plane just before the read.
type planePrint struct {
	mode   string
	plane  dataplane.KernelFingerprinter
	reader dataplane.ReadFingerprinter
}

// planePrints are the planes' parts of KernelFingerprint, in its order,
// each taken by the reader among readers that can; nil when some plane
// has no fingerprint.
func planePrints(readers []dataplane.KernelReader) []planePrint {
	var out []planePrint
	for _, l := range plugins.Loaders() {
		f, ok := l.(dataplane.KernelFingerprinter)
		if !ok {
			return nil
		}
		p := planePrint{mode: l.Mode(), plane: f}
		for _, r := range readers {
			if rf, ok := r.(dataplane.ReadFingerprinter); ok && sameMode(r, l.Mode()) {
				p.reader = rf
			}
		}
		out = append(out, p)
	}
	return out
}

// sameMode says whether a reader is the plane of that mode's.
func sameMode(r dataplane.KernelReader, mode string) bool {
	l, ok := r.(dataplane.Loader)
	return ok && l.Mode() == mode
}

// fingerprintBefore takes, before a read, the parts its readers will not
// take; the readers' parts of an earlier read are dropped.
func (rr *RuleReader) fingerprintBefore(ctx context.Context) ([][]byte, error) {
	if len(rr.prints) == 0 {
		return nil, errors.New("a plane has no fingerprint")
	}
	parts := make([][]byte, len(rr.prints))
	for i, p := range rr.prints {
		if p.reader != nil {
			_, _ = p.reader.ReadFingerprint() // clears what an earlier read left
			continue
		}
		d, err := p.plane.KernelFingerprint(ctx)
		if err != nil {
			return nil, err
		}
		parts[i] = d
	}
	return parts, nil
}

// fingerprintAfter completes, after the read, the parts taken before it
// with the readers' parts: KernelFingerprint of the state read, or nil.
func (rr *RuleReader) fingerprintAfter(parts [][]byte) []byte {
	var out []byte
	for i, p := range rr.prints {
		d := parts[i]
		if p.reader != nil {
			var err error
			if d, err = p.reader.ReadFingerprint(); err != nil {
				return nil
			}
		}
		out = appendPrint(out, p.mode, d)
	}
	return out
}

// appendPrint appends a plane's part of the kernel's fingerprint.
func appendPrint(out []byte, mode string, d []byte) []byte {
	return fmt.Appendf(out, "%s %d:%s\n", mode, len(d), d)
}
