package krew

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The template at the top of the repository, filled in as hack/release.sh
// fills it, is a valid manifest: its mistakes show without a build.
func TestTemplateFilledIsValid(t *testing.T) {
	data, err := os.ReadFile("../../krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "  # completion\n", "\n")
	text = strings.ReplaceAll(text, "{{VERSION}}", "v1.2.3")
	text = regexp.MustCompile(`\{\{URI ([a-z0-9]+)/([a-z0-9]+)\}\}`).ReplaceAllString(text, "https://example.invalid/$1-$2.tar.gz")
	text = regexp.MustCompile(`\{\{SHA256 [a-z0-9/]+\}\}`).ReplaceAllString(text, strings.Repeat("0", 64))
	if strings.Contains(text[strings.Index(text, "apiVersion:"):], "{{") {
		t.Fatalf("krew.yaml has a placeholder hack/release.sh does not fill:\n%s", text)
	}
	p := filepath.Join(t.TempDir(), "svctrace.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(p); err != nil {
		t.Error(err)
	}
}

func validPlugin() *Plugin {
	sel := func(os, arch string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"os": os, "arch": arch}}
	}
	p := &Plugin{APIVersion: APIVersion, Kind: Kind}
	p.Metadata.Name = "svctrace"
	p.Spec = Spec{Version: "v0.1.0", ShortDescription: "one line", Platforms: []Platform{
		{Selector: sel("linux", "amd64"), URI: "https://x/a.tar.gz", Sha256: strings.Repeat("a", 64), Bin: "kubectl-svctrace",
			Files: []FileOperation{{From: "kubectl-svctrace", To: "."}, {From: "LICENSE", To: "."}}},
		{Selector: sel("darwin", "arm64"), URI: "https://x/b.tar.gz", Sha256: strings.Repeat("b", 64), Bin: "kubectl-svctrace"},
	}}
	return p
}

// Each rule of krew's validation refuses the manifest that breaks it.
func TestValidateRefuses(t *testing.T) {
	if err := Validate("svctrace.yaml", validPlugin()); err != nil {
		t.Fatalf("the valid manifest: %v", err)
	}
	for _, c := range []struct {
		name, file, want string
		mutate           func(p *Plugin)
	}{
		{"apiVersion", "svctrace.yaml", "apiVersion", func(p *Plugin) { p.APIVersion = "krew.googlecontainertools.github.com/v1alpha1" }},
		{"kind", "svctrace.yaml", "kind", func(p *Plugin) { p.Kind = "Plugins" }},
		{"file name", "krew.yaml", "name of the file", func(p *Plugin) {}},
		{"extension", "svctrace.yml", ".yaml", func(p *Plugin) {}},
		{"device name", "nul.yaml", "device name", func(p *Plugin) { p.Metadata.Name = "nul" }},
		{"no v", "svctrace.yaml", "does not start with v", func(p *Plugin) { p.Spec.Version = "0.1.0" }},
		{"not semver", "svctrace.yaml", "not a semantic version", func(p *Plugin) { p.Spec.Version = "v0.1" }},
		{"two-line short description", "svctrace.yaml", "line break", func(p *Plugin) { p.Spec.ShortDescription = "a\nb" }},
		{"no platform", "svctrace.yaml", "platforms is empty", func(p *Plugin) { p.Spec.Platforms = nil }},
		{"sha256", "svctrace.yaml", "platforms[0]: sha256", func(p *Plugin) { p.Spec.Platforms[0].Sha256 = strings.Repeat("A", 64) }},
		{"no bin", "svctrace.yaml", "no bin", func(p *Plugin) { p.Spec.Platforms[1].Bin = "" }},
		{"empty files", "svctrace.yaml", "files is empty", func(p *Plugin) { p.Spec.Platforms[0].Files = []FileOperation{} }},
		{"unclean to", "svctrace.yaml", "not a clean path", func(p *Plugin) { p.Spec.Platforms[0].Files[0].To = "./bin/" }},
		{"no selector", "svctrace.yaml", "selector: missing", func(p *Plugin) { p.Spec.Platforms[0].Selector = nil }},
		{"other key", "svctrace.yaml", `key "kernel"`, func(p *Plugin) { p.Spec.Platforms[0].Selector.MatchLabels["kernel"] = "6" }},
		{"unknown platform", "svctrace.yaml", "matches no platform", func(p *Plugin) { p.Spec.Platforms[1].Selector.MatchLabels["arch"] = "riscv64" }},
		{"overlap", "svctrace.yaml", "both select linux/amd64", func(p *Plugin) {
			p.Spec.Platforms[1].Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux"}}
		}},
	} {
		p := validPlugin()
		c.mutate(p)
		err := Validate(c.file, p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// Installing refuses archives krew would refuse or install broken.
func TestInstallRefuses(t *testing.T) {
	pl := validPlugin().Spec.Platforms[0]
	for _, c := range []struct {
		name, want string
		entries    map[string]string
	}{
		{"escape", `".." in its path`, map[string]string{"../kubectl-svctrace": "x", "LICENSE": "x"}},
		{"no bin", "no file in the archive matches", map[string]string{"LICENSE": "x"}},
		{"no licence", "no file in the archive matches", map[string]string{"kubectl-svctrace": "x"}},
	} {
		archive := filepath.Join(t.TempDir(), "a.tar.gz")
		writeTarGz(t, archive, c.entries)
		_, err := Install(archive, pl, filepath.Join(t.TempDir(), "install"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	// Without files, krew moves everything; the licence is still needed.
	pl.Files = nil
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	writeTarGz(t, archive, map[string]string{"kubectl-svctrace": "x", "README": "x"})
	if _, err := Install(archive, pl, filepath.Join(t.TempDir(), "install")); err == nil || !strings.Contains(err.Error(), "no licence") {
		t.Errorf("archive without a licence: error %v", err)
	}
	writeTarGz(t, archive, map[string]string{"kubectl-svctrace": "x", "LICENSE": "x"})
	if _, err := Install(archive, pl, filepath.Join(t.TempDir(), "install")); err != nil {
		t.Errorf("archive with binary and licence: %v", err)
	}
}

func writeTarGz(t *testing.T, path string, entries map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
