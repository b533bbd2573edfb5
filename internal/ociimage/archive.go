package ociimage

import (
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteArchive writes images, keyed by their reference
// ("svctrace.local/pause:lab"), as one image archive (the `docker save`
// layout, which `ctr images import` and `docker load` read).
func WriteArchive(w io.Writer, images map[string]v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for ref, img := range images {
		r, err := name.ParseReference(ref)
		if err != nil {
			return fmt.Errorf("image reference %q: %w", ref, err)
		}
		refs[r] = img
	}
	if err := tarball.MultiRefWrite(refs, w); err != nil {
		return fmt.Errorf("writing image archive: %w", err)
	}
	return nil
}
