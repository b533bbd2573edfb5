//go:build !unix

package snapshot

import "os"

// mapFile does not map files on this system: they are read piece by piece.
func mapFile(*os.File, int64) (source, bool) { return nil, false }
