// Package krew checks a krew plugin manifest and its archives by the rules
// krew's validate-krew-manifest applies (kubernetes-sigs/krew,
// internal/index/validation and cmd/validate-krew-manifest): the structure
// of the manifest, platform selectors that each pick at least one platform
// krew supports and never the same one twice, and an installation of each
// archive as krew does it (extract, move the files, find the binary and a
// licence).
package krew

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// The manifest type krew reads.
const (
	APIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	Kind       = "Plugin"
)

// Plugin is a krew plugin manifest.
type Plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec Spec `json:"spec"`
}

// Spec is what a manifest says about the plugin.
type Spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage,omitempty"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description,omitempty"`
	Caveats          string     `json:"caveats,omitempty"`
	Platforms        []Platform `json:"platforms"`
}

// Platform is one archive and the platforms it installs on.
type Platform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Bin      string                `json:"bin"`
	Files    []FileOperation       `json:"files"`
}

// FileOperation moves files from the extracted archive (From, a path or a
// glob) into the installation directory (To).
type FileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// OSArch is a platform krew installs on.
type OSArch struct{ OS, Arch string }

func (p OSArch) String() string { return p.OS + "/" + p.Arch }

// SupportedPlatforms are the platforms validate-krew-manifest knows.
func SupportedPlatforms() []OSArch {
	return []OSArch{
		{"windows", "386"}, {"windows", "amd64"}, {"windows", "arm64"},
		{"linux", "386"}, {"linux", "amd64"}, {"linux", "arm"}, {"linux", "arm64"}, {"linux", "ppc64le"},
		{"darwin", "386"}, {"darwin", "amd64"}, {"darwin", "arm64"},
	}
}

var (
	safeName    = regexp.MustCompile(`^[\w-]+$`)
	validSHA256 = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// Names Windows reserves for devices.
	windowsReserved = []string{"CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5",
		"COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"}
)

// ReadManifest reads and validates the manifest at path. Unknown fields
// are refused: they are typos krew would silently ignore.
func ReadManifest(path string) (*Plugin, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the krew manifest: %w", err)
	}
	var p Plugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("krew manifest %s: %w", path, err)
	}
	if err := Validate(filepath.Base(path), &p); err != nil {
		return nil, fmt.Errorf("krew manifest %s: %w", path, err)
	}
	return &p, nil
}

// Validate checks a manifest stored under the file name given.
func Validate(fileName string, p *Plugin) error {
	if p.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion is %q, krew reads %q", p.APIVersion, APIVersion)
	}
	if p.Kind != Kind {
		return fmt.Errorf("kind is %q, krew reads %q", p.Kind, Kind)
	}
	if filepath.Ext(fileName) != ".yaml" {
		return fmt.Errorf("the file name %q does not end in .yaml", fileName)
	}
	name := strings.TrimSuffix(fileName, ".yaml")
	if err := checkName(name); err != nil {
		return err
	}
	if p.Metadata.Name != name {
		return fmt.Errorf("metadata.name is %q, but krew wants the name of the file, %q", p.Metadata.Name, name)
	}
	s := p.Spec
	if s.ShortDescription == "" {
		return fmt.Errorf("spec.shortDescription is empty")
	}
	if strings.ContainsAny(s.ShortDescription, "\r\n") {
		return fmt.Errorf("spec.shortDescription has a line break")
	}
	if err := checkVersion(s.Version); err != nil {
		return fmt.Errorf("spec.version: %w", err)
	}
	if len(s.Platforms) == 0 {
		return fmt.Errorf("spec.platforms is empty")
	}
	for i, pl := range s.Platforms {
		if err := checkPlatform(pl); err != nil {
			return fmt.Errorf("spec.platforms[%d]: %w", i, err)
		}
	}
	return checkOverlap(s.Platforms)
}

func checkName(name string) error {
	if !safeName.MatchString(name) {
		return fmt.Errorf("the plugin name %q has characters other than letters, digits, _ and -", name)
	}
	for _, r := range windowsReserved {
		if strings.EqualFold(r, name) {
			return fmt.Errorf("the plugin name %q is a device name on Windows", name)
		}
	}
	return nil
}

// checkVersion wants a semantic version with a leading v.
func checkVersion(v string) error {
	if v == "" {
		return fmt.Errorf("no version")
	}
	if !strings.HasPrefix(v, "v") {
		return fmt.Errorf("%q does not start with v", v)
	}
	if _, err := version.ParseSemantic(v); err != nil {
		return fmt.Errorf("%q is not a semantic version: %w", v, err)
	}
	return nil
}

func checkPlatform(p Platform) error {
	if p.URI == "" {
		return fmt.Errorf("no uri")
	}
	if !validSHA256.MatchString(p.Sha256) {
		return fmt.Errorf("sha256 %q is not 64 lowercase hexadecimal digits", p.Sha256)
	}
	if p.Bin == "" {
		return fmt.Errorf("no bin")
	}
	if p.Files != nil && len(p.Files) == 0 {
		return fmt.Errorf("files is empty: leave it out or name files")
	}
	for j, f := range p.Files {
		if f.From == "" || f.To == "" {
			return fmt.Errorf("files[%d] needs both from and to", j)
		}
		if f.To != filepath.Clean(f.To) {
			return fmt.Errorf("files[%d].to %q is not a clean path (%q)", j, f.To, filepath.Clean(f.To))
		}
	}
	if err := checkSelector(p.Selector); err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	if len(Matching(p.Selector)) == 0 {
		return fmt.Errorf("the selector matches no platform krew supports")
	}
	return nil
}

func checkSelector(sel *metav1.LabelSelector) error {
	if sel == nil {
		return fmt.Errorf("missing")
	}
	if sel.MatchLabels == nil && len(sel.MatchExpressions) == 0 {
		return fmt.Errorf("empty")
	}
	if sel.MatchLabels != nil && len(sel.MatchLabels) == 0 {
		return fmt.Errorf("matchLabels is given but empty")
	}
	if sel.MatchExpressions != nil && len(sel.MatchExpressions) == 0 {
		return fmt.Errorf("matchExpressions is given but empty")
	}
	for k := range sel.MatchLabels {
		if k != "os" && k != "arch" {
			return fmt.Errorf("key %q: krew selects on os and arch only", k)
		}
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != "os" && e.Key != "arch" {
			return fmt.Errorf("key %q: krew selects on os and arch only", e.Key)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return err
	}
	return nil
}

// Matching lists the supported platforms a selector picks.
func Matching(sel *metav1.LabelSelector) []OSArch {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || sel == nil {
		return nil
	}
	var out []OSArch
	for _, p := range SupportedPlatforms() {
		if s.Matches(labels.Set{"os": p.OS, "arch": p.Arch}) {
			out = append(out, p)
		}
	}
	return out
}

// checkOverlap refuses two platforms whose selectors pick the same
// os/arch: krew would install whichever comes first.
func checkOverlap(ps []Platform) error {
	first := map[OSArch]int{}
	for i, p := range ps {
		for _, oa := range Matching(p.Selector) {
			if j, ok := first[oa]; ok {
				return fmt.Errorf("spec.platforms[%d] and [%d] both select %s", j, i, oa)
			}
			first[oa] = i
		}
	}
	return nil
}
