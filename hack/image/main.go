// Command image builds the svctrace container image, reproducibly, without
// a Docker engine: the static kubectl-svctrace binary and the kernel tools
// it runs on a node (iptables in both backends, nft, ipset, conntrack,
// ipvsadm), taken from Debian packages of this machine's release with their
// libraries. It writes an image archive (`docker load` and `ctr images
// import` read it) and, with -push, pushes the image to a registry with the
// credentials of ~/.docker/config.json.
//
//	go run ./hack/image [-version v0.1.0] [-o svctrace-image.tar] [-push registry.example/svctrace:v0.1.0]
//
// hack/image.sh runs it; docs/install.md says how to use the result.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/svctrace/svctrace/internal/ociimage"
)

// packages are the kernel tools' Debian packages (svctrace calls each
// iptables backend by its own name).
var packages = []string{"iptables", "nftables", "conntrack", "ipset", "ipvsadm"}

func main() {
	version := flag.String("version", "", "version stamped into the binary and the image's labels (default: git describe)")
	out := flag.String("o", "svctrace-image.tar", "image archive to write (\"\" for none)")
	ref := flag.String("ref", "", "image reference inside the archive (default svctrace.local/svctrace:VERSION)")
	push := flag.String("push", "", "also push the image to this reference (registry/repository:tag)")
	cache := flag.String("deb-cache", filepath.Join(userCache(), "svctrace-image", "debs"), "where the Debian packages are kept between builds")
	flag.Parse()
	if err := run(*version, *out, *ref, *push, *cache); err != nil {
		fmt.Fprintln(os.Stderr, "hack/image:", err)
		os.Exit(1)
	}
}

func userCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d
	}
	return os.TempDir()
}

func run(version, out, ref, push, cache string) error {
	ctx := context.Background()
	if version == "" {
		b, err := exec.Command("git", "describe", "--always", "--dirty").Output()
		if err != nil {
			return fmt.Errorf("git describe (give -version): %w", err)
		}
		version = strings.TrimSpace(string(b))
	}
	if ref == "" {
		ref = "svctrace.local/svctrace:" + version
	}
	tmp, err := os.MkdirTemp("", "svctrace-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "kubectl-svctrace")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/kubectl-svctrace")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building kubectl-svctrace: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	files, taken, err := ociimage.KernelTools(ctx, cache, packages...)
	if err != nil {
		return err
	}
	files = append(files, ociimage.File{Path: "/usr/local/bin/kubectl-svctrace", Mode: 0o755, Data: data})
	img, err := ociimage.Build(ociimage.Spec{
		Files:      files,
		Entrypoint: []string{"/usr/local/bin/kubectl-svctrace"},
		Env:        []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "svctrace",
			"org.opencontainers.image.version": version,
			"org.opencontainers.image.source":  "https://github.com/svctrace/svctrace",
			"dev.svctrace.debian-packages":     strings.Join(taken, " "),
		},
	})
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		if err := ociimage.WriteArchive(f, map[string]v1.Image{ref: img}); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %s (%s), %d files from %d Debian packages\n", out, ref, digest, len(files), len(taken))
	}
	if push != "" {
		r, err := name.ParseReference(push)
		if err != nil {
			return fmt.Errorf("-push %q: %w", push, err)
		}
		if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", push, err)
		}
		fmt.Printf("pushed %s (%s)\n", push, digest)
	}
	return nil
}
