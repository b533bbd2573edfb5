//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopNodeRuntime stops a node's kubelet, its Pods' processes (by the PIDs of its cgroups),
// its containerd and that containerd's shims, and unmounts what they mounted under the node's
// directory (overlay roots, sandboxes' shm, Pods' network namespaces, volumes).
func stopNodeRuntime(rt *nodeRuntime) error {
	var errs []error
	if rt.kubelet != nil {
		errs = append(errs, rt.kubelet.stop(10*time.Second))
	}
	errs = append(errs, removeCgroupRoot(rt.cgroupRoot))
	if rt.containerd != nil {
		errs = append(errs, rt.containerd.stop(10*time.Second))
	}
	killShims(rt.dir)
	if err := unmountUnder(rt.dir); err != nil {
		// Keep the files under mounts that stay.
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, removeLogLinks(hostLogLinks, rt.podLogs()), os.RemoveAll(rt.dir))
	return errors.Join(errs...)
}

// removeLogLinks removes the links in dir that point under target: the ones the node's kubelet
// made for its containers. Links of anything else stay.
func removeLogLinks(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		to, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(to, target+string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims started for the containerd whose files are under dir
// (a shim names its containerd's socket on its command line).
func killShims(dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), "containerd-shim") {
			continue
		}
		if strings.Contains(string(b), "\x00"+dir+string(os.PathSeparator)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder detaches every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if strings.HasPrefix(p, dir+string(os.PathSeparator)) {
			points = append(points, p)
		}
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanupStaleRuntimes removes what the nodes of lab runs whose process is gone left behind
// (the run was killed before its teardown): processes whose command line names one of their
// directories (kubelets, containerds, shims), their Pods' cgroups and their mounts. Such a
// run's names start with NamespacePrefix<pid>-.
func cleanupStaleRuntimes(dead func(pid int) bool) error {
	stale := regexp.MustCompile(`/(` + NamespacePrefix + `([0-9]+)-[0-9a-f]+-node[0-9]+)(/|\x00|$)`)
	isStale := func(s string) (string, bool) {
		m := stale.FindStringSubmatch(s)
		if m == nil {
			return "", false
		}
		pid, _ := strconv.Atoi(m[2])
		return m[1], dead(pid)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			if _, ok := isStale(string(b)); ok {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	var errs []error
	hs, _ := cgroupHierarchies()
	roots := map[string]bool{}
	for _, h := range hs {
		dirs, _ := os.ReadDir(h)
		for _, d := range dirs {
			if name, ok := isStale("/" + d.Name()); ok && d.IsDir() {
				roots["/"+name] = true
			}
		}
	}
	for root := range roots {
		errs = append(errs, removeCgroupRoot(root))
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		dirs := map[string]bool{}
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			p := unescapeMount(f[4])
			if name, ok := isStale(p); ok {
				dirs[p[:strings.Index(p, "/"+name)+1+len(name)]] = true
			}
		}
		for d := range dirs {
			errs = append(errs, unmountUnder(d))
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), NamespacePrefix+"*-node*"))
	for _, d := range dirs {
		if _, ok := isStale(d); ok {
			if err := unmountUnder(d); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}
