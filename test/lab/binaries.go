//go:build linux

package lab

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// DefaultK8sVersion is the Kubernetes release the lab builds when SVCTRACE_LAB_K8S_VERSION is
// not set: the newest v1.36.x on the Go module proxy when the lab was written.
const DefaultK8sVersion = "v1.36.3"

// Environment variables read by the lab.
const (
	EnvK8sVersion   = "SVCTRACE_LAB_K8S_VERSION"   // control plane (and default kube-proxy) version
	EnvProxyVersion = "SVCTRACE_LAB_PROXY_VERSION" // comma-separated kube-proxy versions; first is the default
	EnvCache        = "SVCTRACE_LAB_CACHE"         // binary cache root, default ~/.cache/svctrace-lab
	EnvNoBuild      = "SVCTRACE_LAB_NO_BUILD"      // "1": never run build.sh, skip (fail under CI) when binaries are missing
)

// K8sVersion is the control-plane version selected by the environment.
func K8sVersion() string {
	if v := strings.TrimSpace(os.Getenv(EnvK8sVersion)); v != "" {
		return v
	}
	return DefaultK8sVersion
}

// ProxyVersions lists the kube-proxy versions selected by the environment
// (SVCTRACE_LAB_PROXY_VERSION, comma separated), defaulting to K8sVersion(). Tests that
// compare kube-proxy generations iterate over it; StartKubeProxy uses the first.
func ProxyVersions() []string {
	var out []string
	for v := range strings.SplitSeq(os.Getenv(EnvProxyVersion), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = []string{K8sVersion()}
	}
	return out
}

// CacheDir is the root of the binary cache; binaries live in CacheDir()/<version>/.
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "svctrace-lab")
}

// inCI reports whether lab problems must fail instead of skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// skipOrFatal fails under CI=true and skips otherwise.
func skipOrFatal(t TB, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("lab: "+format, args...)
	}
	t.Skipf("lab: "+format, args...)
}

// requireRoot skips (fails under CI) when the process cannot manage network namespaces.
func requireRoot(t TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		skipOrFatal(t, "needs Linux, running on %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		skipOrFatal(t, "needs root (network namespaces, netfilter); run as root or with sudo -E")
	}
	for _, tool := range []string{"ip", "iptables", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFatal(t, "needs %s in PATH: %v", tool, err)
		}
	}
}

// buildScript finds test/tools/build.sh.
func buildScript() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "..", "tools", "build.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/svctrace/svctrace").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "test", "tools", "build.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("cannot find test/tools/build.sh")
}

// EnsureBinaries returns the directory holding the requested components (kube-apiserver,
// kube-proxy, etcd; all three when none are named) for version, running test/tools/build.sh
// when some are missing. Build progress goes to stderr. Missing binaries skip the test, or
// fail it under CI=true.
func EnsureBinaries(t TB, version string, components ...string) string {
	t.Helper()
	dir, err := ensureBinaries(version, components...)
	if err != nil {
		skipOrFatal(t, "%v", err)
	}
	return dir
}

func ensureBinaries(version string, components ...string) (string, error) {
	if len(components) == 0 {
		components = []string{"kube-apiserver", "kube-proxy", "etcd"}
	}
	dir := filepath.Join(CacheDir(), version)
	var missing []string
	for _, c := range components {
		if fi, err := os.Stat(filepath.Join(dir, c)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return dir, nil
	}
	if os.Getenv(EnvNoBuild) == "1" {
		return "", fmt.Errorf("binaries %v for %s missing in %s and %s=1", missing, version, dir, EnvNoBuild)
	}
	script, err := buildScript()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "lab: building %v %s with %s (minutes on a cold cache)\n", missing, version, script)
	var tail bytes.Buffer
	cmd := exec.Command("bash", append([]string{script, version}, missing...)...)
	cmd.Env = append(os.Environ(), EnvCache+"="+CacheDir())
	cmd.Stdout = io.MultiWriter(os.Stderr, &tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s %v: %v\n%s", script, version, missing, err, lastLines(tail.String(), 30))
	}
	return dir, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildLabnet compiles the labnet helper into dir.
func buildLabnet(dir string) (string, error) {
	out := filepath.Join(dir, "labnet")
	pkg := "github.com/svctrace/svctrace/test/lab/cmd/labnet"
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if _, file, _, ok := runtime.Caller(0); ok {
		if d := filepath.Join(filepath.Dir(file), "cmd", "labnet"); dirExists(d) {
			cmd.Dir = d
		}
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Main runs a package of lab tests (its TestMain calls it). Without root
// and outside CI, where a lab test could only skip, it runs none and says
// so in one line (go test -v shows it; go test ./... reports the package
// with "[no tests to run]"); under CI=true every test runs, and fails
// without root. As root it first removes what crashed runs left.
func Main(m *testing.M) int {
	if os.Geteuid() != 0 && !inCI() {
		fmt.Println("lab tests not run: they need root (network namespaces, netfilter); sudo hack/test-all.sh runs them")
		if err := flag.Set("test.run", "^$"); err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
		}
		return m.Run()
	}
	if os.Geteuid() == 0 {
		if err := CleanupStale(); err != nil {
			fmt.Fprintln(os.Stderr, "lab: stale cleanup:", err)
		}
	}
	return m.Run()
}
