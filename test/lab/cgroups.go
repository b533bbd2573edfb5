//go:build linux

package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupFS is where this host mounts its cgroup hierarchies (v1, one per controller, and the
// v2 "unified" one of the hybrid layout).
const cgroupFS = "/sys/fs/cgroup"

// cgroupHierarchies lists the mounted hierarchies' directories.
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(cgroupFS, e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// makeCgroupRoot creates a node's cgroup root in every hierarchy (the kubelet checks that its
// cgroupRoot exists); a new cpuset gets its parent's CPUs and memory nodes.
func makeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot kills every process left in a node's cgroup root (the Pods' processes, by
// the PIDs the cgroups list) and removes its cgroups, deepest first, in every hierarchy.
func removeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h, root)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := rmdirCgroup(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirCgroup removes one cgroup, killing its processes first.
func rmdirCgroup(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
