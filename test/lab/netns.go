//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
)

// NamespacePrefix starts the name of every network namespace the lab creates:
// svct-<pid>-<random>-<role>. The PID lets CleanupStale recognise leftovers of dead runs.
const NamespacePrefix = "svct-"

const netnsDir = "/run/netns"

// run executes a command in the starting namespace (used only for `ip netns add/del` and
// `ip -n NS ...`, which act on lab namespaces) and returns its stdout.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// ipn runs `ip -n ns args...`.
func ipn(ns string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := run(ctx, "ip", append([]string{"-n", ns}, args...)...)
	return err
}

// nsExec runs argv inside namespace ns with `ip netns exec`.
func nsExec(ctx context.Context, ns string, argv ...string) (string, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
}

// sysctls sets net sysctls inside ns by writing /proc/sys from within it.
func sysctls(ns string, kv ...string) error {
	args := []string{"-q", "-w"}
	args = append(args, kv...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := nsExec(ctx, ns, append([]string{"sysctl"}, args...)...)
	return err
}

func addNetns(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := run(ctx, "ip", "netns", "add", name); err != nil {
		return err
	}
	return ipn(name, "link", "set", "lo", "up")
}

func delNetns(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := run(ctx, "ip", "netns", "del", name)
	if err != nil && !netnsExists(name) {
		return nil
	}
	return err
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// nsPids lists the processes whose network namespace is ns.
func nsPids(ns string) []int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := run(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(out) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// CleanupStale deletes network namespaces left by lab runs whose process is gone
// (svct-<pid>-… with <pid> dead), after killing lab processes (binaries from the lab cache or
// labnet) still inside them. Namespaces of live runs, including other concurrent test
// binaries, are left alone. Start calls it; TestMain may call it too.
func CleanupStale() error {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	staleName := regexp.MustCompile(`^` + NamespacePrefix + `([0-9]+)-`)
	var errs []error
	// Nodes that ran Pods leave processes, cgroups and mounts outside their namespaces.
	errs = append(errs, cleanupStaleRuntimes(func(pid int) bool { return pid != os.Getpid() && !pidAlive(pid) }))
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || pidAlive(pid) {
			continue
		}
		for _, p := range nsPids(e.Name()) {
			if isLabProcess(p) {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if err := delNetns(e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isLabProcess reports whether pid runs one of the lab's binaries.
func isLabProcess(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if strings.HasPrefix(exe, CacheDir()+string(os.PathSeparator)) {
		return true
	}
	return filepath.Base(exe) == "labnet"
}

// dialInNetns dials addr (an IP literal) from inside the network namespace at nsPath, on a
// thread that joins the namespace for the dial only (netns.Run); sockets keep their
// namespace, so the connection stays inside the lab. The starting namespace gets no route or
// interface into the lab.
func dialInNetns(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := netns.Run(nsPath, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		if c != nil {
			c.Close() // dialled, but the thread could not go back to its namespace
		}
		return nil, err
	}
	return c, nil
}
