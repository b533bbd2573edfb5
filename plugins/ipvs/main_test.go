package ipvs

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// TestMain is also the repair's writing process when a test's write
// starts this binary as svctrace's own (dataplane.DetachedWriteArgs).
func TestMain(m *testing.M) {
	if a := os.Args; len(a) == 5 && a[1] == "reconcile" && a[2] == dataplane.DetachedWriteCommand && a[3] == "ipvs" {
		if err := (Loader{}).WriteDetached(context.Background(), a[4]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
