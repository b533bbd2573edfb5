//go:build linux

package ipvs

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestKernelFingerprint: a namespace of the test's has no IPVS table in use
// (the module not loaded, or no virtual server): the digest says so, the
// same each time.
func TestKernelFingerprint(t *testing.T) {
	ns := netnstest.New(t, "ipvsfp")
	var d1, d2 []byte
	if err := netns.Run(filepath.Join("/run/netns", ns), func() (err error) {
		if d1, err = (Loader{}).KernelFingerprint(context.Background()); err != nil {
			return err
		}
		d2, err = Loader{}.KernelFingerprint(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d1, d2) || (string(d1) != "IPVS: not loaded" && string(d1) != "IPVS: empty") {
		t.Errorf("digests %q and %q", d1, d2)
	}
}
