package inspect

import (
	"context"
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins"
)

// KernelFingerprint is a digest of the kernel state every plane reads in
// the calling thread's network namespace (dataplane.KernelFingerprinter):
// equal digests, taken by this process, mean the planes' state did not
// change in between. An error says some plane cannot tell (a plane without
// a digest, or a state it could not read).
func KernelFingerprint(ctx context.Context) ([]byte, error) {
	var out []byte
	for _, l := range plugins.Loaders() {
		f, ok := l.(dataplane.KernelFingerprinter)
		if !ok {
			return nil, fmt.Errorf("the %s plane cannot tell whether its state changed", l.Mode())
		}
		d, err := f.KernelFingerprint(ctx)
		if err != nil {
			return nil, err
		}
		out = appendPrint(out, l.Mode(), d)
	}
	return out, nil
}
