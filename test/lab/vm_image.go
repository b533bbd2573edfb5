//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// vmModules are the kernel modules a VM node loads: IPVS with its
// schedulers, the netfilter parts kube-proxy's ipvs mode writes iptables
// rules and ipsets with, the dummy device kube-ipvs0 is, veth for pod
// namespaces, the virtio network card and the virtio port commands come
// through. Their dependencies come along.
var vmModules = []string{
	// virtio_pci first: the bus the network card and the control port
	// are found on (no symbol ties the drivers to it).
	"virtio_pci", "virtio_net", "virtio_console",
	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "dummy", "veth",
	"nf_conntrack", "nf_nat", "nf_conntrack_netlink", "iptable_nat", "iptable_filter", "iptable_mangle",
	"ip6table_nat", "ip6table_filter", "ip6table_mangle", "xt_comment", "xt_mark", "xt_conntrack",
	"xt_addrtype", "xt_MASQUERADE", "xt_set", "xt_statistic", "xt_multiport", "xt_ipvs", "xt_nat",
	"xt_recent", "ipt_REJECT", "ip6t_REJECT", "ip_set", "ip_set_hash_ip", "ip_set_hash_ipport",
	"ip_set_hash_ipportip", "ip_set_hash_ipportnet", "ip_set_bitmap_port", "ip_set_hash_net",
	// ipvs mode matches physdev on externalIPs: without it, its whole
	// iptables-restore fails.
	"xt_physdev", "br_netfilter",
}

// vmTools are the host's binaries the VM runs (kube-proxy execs
// iptables and ipset; ipvsadm shows the table; iproute2's ip makes pod
// namespaces' veth pairs, which busybox's cannot), with the libraries
// they load; iptables is the legacy backend, which needs no nft.
var vmTools = []string{"/usr/sbin/xtables-legacy-multi", "/usr/sbin/ipset", "/usr/sbin/ipvsadm", "/bin/ip"}

// vmKernel is Debian's kernel of the machine's release, unpacked: its
// image, its release name, and the tree its modules are under.
type vmKernel struct {
	image, release, root string
}

// debianKernel unpacks Debian's kernel package (once, into the cache)
// and indexes its modules.
func debianKernel(ctx context.Context) (vmKernel, error) {
	pkg, err := debianDependency(ctx, "linux-image-amd64", "linux-image-")
	if err != nil {
		return vmKernel{}, err
	}
	root, err := debianPackage(ctx, pkg)
	if err != nil {
		return vmKernel{}, err
	}
	images, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(images) != 1 {
		return vmKernel{}, fmt.Errorf("%s: %d kernel images in boot/", pkg, len(images))
	}
	k := vmKernel{image: images[0], release: strings.TrimPrefix(filepath.Base(images[0]), "vmlinuz-"), root: root}
	if _, err := os.Stat(filepath.Join(root, "lib", "modules", k.release, "modules.dep")); err != nil {
		if out, err := exec.CommandContext(ctx, "depmod", "-b", root, k.release).CombinedOutput(); err != nil {
			return vmKernel{}, fmt.Errorf("depmod for %s (kmod): %w\n%s", pkg, err, out)
		}
	}
	return k, nil
}

// moduleOrder is the modules' files in an order insmod can load them in,
// each after what it depends on.
func (k vmKernel) moduleOrder(ctx context.Context, names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range names {
		text, err := exec.CommandContext(ctx, "modprobe", "--show-depends", "-d", k.root, "-S", k.release, m).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("modprobe --show-depends %s: %w\n%s", m, err, text)
		}
		for _, l := range strings.Split(string(text), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "insmod" && !seen[f[1]] {
				seen[f[1]] = true
				out = append(out, f[1])
			}
		}
	}
	return out, nil
}

// vmInitramfs lays out the VM's root: busybox, the modules, the tools
// with their libraries, and extra (path in the VM to content).
func vmInitramfs(ctx context.Context, k vmKernel, initScript string, extra map[string]cpioFile) (map[string]cpioFile, error) {
	files := map[string]cpioFile{}
	bb, err := debianPackage(ctx, "busybox-static")
	if err != nil {
		return nil, err
	}
	if err := addHostFile(files, filepath.Join(bb, "bin", "busybox"), "bin/busybox"); err != nil {
		return nil, err
	}
	mods, err := k.moduleOrder(ctx, vmModules)
	if err != nil {
		return nil, err
	}
	var insmods strings.Builder
	for _, m := range mods {
		rel, err := filepath.Rel(k.root, m)
		if err != nil {
			return nil, err
		}
		if err := addHostFile(files, m, rel); err != nil {
			return nil, err
		}
		fmt.Fprintf(&insmods, "insmod /%s\n", rel)
	}
	for _, tool := range vmTools {
		if err := addWithLibraries(files, tool); err != nil {
			return nil, err
		}
	}
	// iproute2's ip is /usr/sbin/ip: busybox's shell runs its own applet
	// for a bare "ip" whatever the PATH says, so it is called by its path.
	files["usr/sbin/ip"] = files["bin/ip"]
	delete(files, "bin/ip")
	exts, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/xtables/*.so")
	for _, e := range exts {
		if err := addHostFile(files, e, strings.TrimPrefix(e, "/")); err != nil {
			return nil, err
		}
	}
	// ipset and iptables name protocols (tcp:80) through /etc/protocols.
	if err := addHostFile(files, "/etc/protocols", "etc/protocols"); err != nil {
		return nil, err
	}
	for _, n := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
		"iptables-legacy-save", "ip6tables-legacy-save", "iptables-legacy-restore", "ip6tables-legacy-restore"} {
		files["usr/sbin/"+n] = cpioFile{link: "xtables-legacy-multi", mode: 0o777}
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "run", "var/run", "etc", "root"} {
		addDirs(files, d)
	}
	files["init"] = cpioFile{data: []byte(strings.Replace(initScript, "@INSMODS@", insmods.String(), 1)), mode: 0o755}
	for p, f := range extra {
		addDirs(files, filepath.Dir(p))
		files[p] = f
	}
	return files, nil
}

// addHostFile adds the host's file src at dst.
func addHostFile(files map[string]cpioFile, src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	addDirs(files, filepath.Dir(dst))
	files[dst] = cpioFile{data: data, mode: st.Mode().Perm()}
	return nil
}

// addWithLibraries adds a host binary and the shared libraries ldd says
// it loads, at their paths.
func addWithLibraries(files map[string]cpioFile, bin string) error {
	if err := addHostFile(files, bin, strings.TrimPrefix(bin, "/")); err != nil {
		return err
	}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", bin, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0] // the loader
		default:
			continue
		}
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return err
		}
		if err := addHostFile(files, real, strings.TrimPrefix(lib, "/")); err != nil {
			return err
		}
	}
	return nil
}
