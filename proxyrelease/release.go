// Package proxyrelease knows how kube-proxy's releases differ in what they
// program: which release a node's kube-proxy is, which model of the window
// svctrace is proven in (v1.30 to v1.37) stands for it, and each behaviour
// that changed inside the window as a function of the release. The
// per-release record with its upstream changes is docs/kube-proxy-releases.md;
// each data plane keeps its own rule layouts by release.
package proxyrelease

import (
	"fmt"
	"strconv"
	"strings"
)

// Oldest and Newest are the minor releases (1.Minor) of the window: every
// release between them was run in the lab against its real binary.
const (
	Oldest = 30
	Newest = 37
)

// Release is the model of kube-proxy svctrace analyses a node with. The
// zero Release is the newest.
type Release struct {
	// Minor is the minor release whose model applies (1.Minor), within
	// the window; 0 is the newest.
	Minor int
	// Patch is the patch release (1.Minor.Patch), -1 when not told (the
	// latest patch release is assumed).
	Patch int
	// Told is kube-proxy's version as the input told it; "" when nothing
	// told it.
	Told string
	// Outside says the told version is outside the window (or not a
	// version svctrace reads): Minor is then the nearest release of it.
	Outside string
}

// For reads a kube-proxy version ("v1.32.13", "1.30", "v1.30.4+k3s1",
// "v1.31.2-eks-7f9249a"): the release told, the nearest of the window for
// one outside it, and the newest when no version is told.
func For(version string) Release {
	r := Release{Minor: Newest, Patch: -1, Told: version}
	if version == "" {
		return r
	}
	minor, ok := Minor(version)
	if p, ok := Patch(version); ok && minor >= Oldest && minor <= Newest {
		r.Patch = p
	}
	switch {
	case !ok:
		r.Outside = fmt.Sprintf("kube-proxy version %q is not a v1 version svctrace reads: analysed as v1.%d, the newest release it is proven against", version, Newest)
	case minor < Oldest:
		r.Minor = Oldest
		r.Outside = fmt.Sprintf("kube-proxy %s is older than the releases svctrace is proven against (v1.%d to v1.%d): analysed as v1.%d, the nearest; what changed before it is not modelled", version, Oldest, Newest, Oldest)
	case minor > Newest:
		r.Outside = fmt.Sprintf("kube-proxy %s is newer than the releases svctrace is proven against (v1.%d to v1.%d): analysed as v1.%d, the nearest; what changed after it is not modelled", version, Oldest, Newest, Newest)
	default:
		r.Minor = minor
	}
	return r
}

// Minor reads the minor release off a kube-proxy version: "v1.36.3",
// "1.33", "v1.30.4+k3s1" and "v1.31.2-eks-1" give 36, 33, 30 and 31; ok
// false for what is not a v1 version.
func Minor(version string) (minor int, ok bool) {
	major, rest, found := strings.Cut(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".")
	if !found {
		return 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	return n, major == "1" && err == nil
}

// Span names the releases lo to hi: "v1.30 to v1.37".
func Span(lo, hi int) string { return fmt.Sprintf("v1.%d to v1.%d", lo, hi) }

// Patch reads the patch release off a kube-proxy version: "v1.33.4",
// "v1.30.4+k3s1" and "v1.31.2-eks-1" give 4, 4 and 2; ok false for "1.33"
// or what is not a v1 version.
func Patch(version string) (patch int, ok bool) {
	if _, ok := Minor(version); !ok {
		return 0, false
	}
	f := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".", 3)
	if len(f) < 3 {
		return 0, false
	}
	end := 0
	for end < len(f[2]) && f[2][end] >= '0' && f[2][end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(f[2][:end])
	return n, err == nil
}

// Known says a version was told: the model is the node's own release (or
// the nearest one, when Outside).
func (r Release) Known() bool { return r.Told != "" }

// minor is the minor release whose model applies.
func (r Release) minor() int {
	if r.Minor == 0 {
		return Newest
	}
	return r.Minor
}

// String is the model's release, "v1.37".
func (r Release) String() string { return "v1." + strconv.Itoa(r.minor()) }

// ZoneHintsNeedAnnotation: v1.30 uses an EndpointSlice's zone hints only
// for a Service annotated service.kubernetes.io/topology-mode (or the
// older topology-aware-hints) with a value other than "" and "disabled";
// its ServiceTrafficDistribution gate was alpha and off. From v1.31 (the
// gate beta and on) the hints are used whenever every ready endpoint has
// them.
func (r Release) ZoneHintsNeedAnnotation() bool { return r.minor() < 31 }

// NodeHints: kube-proxy prefers the endpoints whose node hints name its
// node from v1.34 (PreferSameTrafficDistribution beta and on; alpha and
// off in v1.33, absent before).
func (r Release) NodeHints() bool { return r.minor() >= 34 }

// NFTablesChecksEndpointsBeforeDNAT: nftables mode of v1.31 and v1.32 runs
// its filter chain of the output hook before DNAT, so the check for
// Services without endpoints sees a connection from the node itself with
// its Service address: one to an external IP or load balancer IP of a
// Service whose externalTrafficPolicy is Local and which has no endpoint
// on the node is dropped there. From v1.33.6 that chain runs after DNAT, and
// the connection is short-circuited to the cluster's endpoints, as in
// iptables mode.
//
// The fix (kubernetes#132456, in v1.34.0) was backported to v1.33.6:
// v1.33.0 to v1.33.5 still drop.
func (r Release) NFTablesChecksEndpointsBeforeDNAT() bool {
	return r.minor() < 33 || r.minor() == 33 && r.Patch >= 0 && r.Patch < 6
}
