package proxyrelease

import (
	"strings"
	"testing"
)

func TestPatch(t *testing.T) {
	for v, want := range map[string]int{"v1.33.4": 4, "v1.30.4+k3s1": 4, "v1.31.2-eks-7f9249a": 2, "v1.30.5-gke.1014001": 5, "1.33": -1, "latest": -1} {
		got, ok := Patch(v)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("Patch(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestFor(t *testing.T) {
	for _, c := range []struct {
		version string
		minor   int
		outside string // a word the warning must hold; "" for none
	}{
		{"", Newest, ""},
		{"v1.30.14", 30, ""},
		{"v1.37.2", 37, ""},
		{"1.33", 33, ""},
		{"v1.30.4+k3s1", 30, ""},
		{"v1.31.2-eks-7f9249a", 31, ""},
		{"v1.30.5-gke.1014001", 30, ""},
		{"v1.29.4", Oldest, "older"},
		{"v1.38.0", Newest, "newer"},
		{"v2.0.0", Newest, "not a v1 version"},
		{"latest", Newest, "not a v1 version"},
	} {
		r := For(c.version)
		if r.Minor != c.minor || r.Told != c.version {
			t.Errorf("For(%q) = %+v, want minor %d", c.version, r, c.minor)
		}
		if (r.Outside != "") != (c.outside != "") || !strings.Contains(r.Outside, c.outside) {
			t.Errorf("For(%q).Outside = %q, want one with %q", c.version, r.Outside, c.outside)
		}
		if r.Known() != (c.version != "") {
			t.Errorf("For(%q).Known() = %v", c.version, r.Known())
		}
	}
}

// TestBehaviours pins each release-dependent behaviour at the release
// that changed it (docs/kube-proxy-releases.md).
func TestBehaviours(t *testing.T) {
	for minor := Oldest; minor <= Newest; minor++ {
		r := Release{Minor: minor, Patch: -1}
		if got, want := r.ZoneHintsNeedAnnotation(), minor == 30; got != want {
			t.Errorf("v1.%d: ZoneHintsNeedAnnotation %v, want %v", minor, got, want)
		}
		if got, want := r.NodeHints(), minor >= 34; got != want {
			t.Errorf("v1.%d: NodeHints %v, want %v", minor, got, want)
		}
		if got, want := r.NFTablesChecksEndpointsBeforeDNAT(), minor < 33; got != want {
			t.Errorf("v1.%d: NFTablesChecksEndpointsBeforeDNAT %v, want %v", minor, got, want)
		}
	}
	if zero := (Release{}); zero.String() != "v1.37" || zero.ZoneHintsNeedAnnotation() || !zero.NodeHints() || zero.NFTablesChecksEndpointsBeforeDNAT() {
		t.Errorf("the zero Release is not the newest: %s", zero)
	}
	if got := For("v1.38.1").String(); got != "v1.37" {
		t.Errorf("a release after the window is analysed as %s, want v1.37", got)
	}
	// The pre-DNAT drop was fixed in v1.33.6 (a backport).
	for v, want := range map[string]bool{"v1.33.5": true, "v1.33.6": false, "v1.33.13": false, "1.33": false, "v1.32.13": true} {
		if got := For(v).NFTablesChecksEndpointsBeforeDNAT(); got != want {
			t.Errorf("%s: NFTablesChecksEndpointsBeforeDNAT %v, want %v", v, got, want)
		}
	}
	if got := Span(30, 37); got != "v1.30 to v1.37" {
		t.Errorf("Span = %q", got)
	}
}
