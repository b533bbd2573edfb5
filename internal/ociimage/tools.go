package ociimage

import "context"

// kernelToolsExcluded are dependencies of the kernel tools' packages that a
// container never runs (init-script helpers).
var kernelToolsExcluded = []string{"lsb-base", "sysvinit-utils"}

// iptablesAlternatives are the links Debian's update-alternatives makes when
// iptables is installed (the package holds only the -nft and -legacy
// names): to the nf_tables backend, Debian's default.
var iptablesAlternatives = map[string]string{
	"/usr/sbin/iptables": "iptables-nft", "/usr/sbin/iptables-save": "iptables-nft-save", "/usr/sbin/iptables-restore": "iptables-nft-restore",
	"/usr/sbin/ip6tables": "ip6tables-nft", "/usr/sbin/ip6tables-save": "ip6tables-nft-save", "/usr/sbin/ip6tables-restore": "ip6tables-nft-restore",
}

// KernelTools are the files of Debian packages of kernel tools (iptables,
// nftables, conntrack, ipset, ipvsadm) with their libraries, and the links
// that make `iptables` the nf_tables backend when iptables is among them;
// also the packages taken, as DebianFiles gives them.
func KernelTools(ctx context.Context, cacheDir string, packages ...string) ([]File, []string, error) {
	files, taken, err := DebianFiles(ctx, DebianOptions{Packages: packages, Exclude: kernelToolsExcluded, CacheDir: cacheDir})
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	for link, target := range iptablesAlternatives {
		if have["/usr/sbin/"+target] && !have[link] {
			files = append(files, File{Path: link, Link: target})
		}
	}
	return files, taken, nil
}
