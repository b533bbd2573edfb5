//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// nodeRuntime is what runs Pods on a node: its own containerd (root, state, socket, CNI
// configuration) and its own kubelet (root dir, cgroup root, credentials).
type nodeRuntime struct {
	dir        string // $TMPDIR/svct-<pid>-<rnd>-<node>
	socket     string // containerd's CRI socket
	cgroupRoot string // "/svct-<pid>-<rnd>-node1" in every cgroup v1 hierarchy
	containerd *proc
	kubelet    *proc
}

// podLogs is the node's own root of Pod logs (the kubelet's podLogsDir).
func (rt *nodeRuntime) podLogs() string { return filepath.Join(rt.dir, "pod-logs") }

// hostLogLinks is where every kubelet links its containers' logs (a path it does not let
// anyone configure), beside the links of the host's own kubelet if it has one.
const hostLogLinks = "/var/log/containers"

// containerdConfig is a node's containerd configuration: its paths under dir, the lab's pause
// image, runc with the cgroupfs driver (the kubelet's), and the CNI configuration of the node.
func containerdConfig(rt *nodeRuntime) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  enable_selinux = false
  # Pods' network namespaces live under the state dir, not in /var/run/netns beside every
  # other node's: teardown finds each node's own.
  netns_mounts_under_state_dir = true
  # This sandbox may not lower a process's oom_score_adj (no CAP_SYS_RESOURCE over the
  # host's defaults): the kubelet's -998 for sandboxes is clamped to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
`, filepath.Join(rt.dir, "containerd", "root"), filepath.Join(rt.dir, "containerd", "state"), rt.socket,
		rt.socket+".ttrpc", filepath.Join(rt.dir, "containerd", "opt"), PauseImage, filepath.Join(rt.dir, "cni", "net.d"))
}

// cniConfig is the node's CNI network: ptp (a veth per Pod and a host route to it, the routed
// model of the rest of the lab: this kernel has no br_netfilter, so a bridge would hide
// same-node Service traffic from kube-proxy's rules), host-local addresses from the upper half
// of the node's pod CIDR (the lower half is AddPod's), portmap and loopback.
func cniConfig(n *Node, rt *nodeRuntime) string {
	prefix := n.PodCIDR[:len(n.PodCIDR)-len("0/24")]
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "svctrace-lab",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "rangeStart": "%s128", "rangeEnd": "%s250", "gateway": "%s1"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.PodCIDR, prefix, prefix, prefix, filepath.Join(rt.dir, "cni", "ipam"))
}

// startContainerd starts the node's containerd and imports the lab's images into it.
func (l *Lab) startContainerd(n *Node, rt *nodeRuntime, images string) error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(filepath.Join(rt.dir, d), 0o755); err != nil {
			return err
		}
	}
	conf := filepath.Join(rt.dir, "containerd", "config.toml")
	if err := os.WriteFile(conf, []byte(containerdConfig(rt)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rt.dir, "cni", "net.d", "10-lab.conflist"), []byte(cniConfig(n, rt)), 0o644); err != nil {
		return err
	}
	p, err := l.startHostMountsProc(n.Name+"-containerd", n.NetNS, "containerd", "--config", conf, "--log-level", "warn")
	if err != nil {
		return err
	}
	rt.containerd = p
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p.exited() {
			b, _ := os.ReadFile(p.log)
			return fmt.Errorf("containerd exited: %v\n%s", p.err, lastLines(string(b), 20))
		}
		if _, err := os.Stat(rt.socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd: no socket %s after 30s", rt.socket)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return importImages(ctx, n, images)
}

func importImages(ctx context.Context, n *Node, archive string) error {
	if out, err := run(ctx, "ctr", "--address", n.runtime.socket, "--namespace", "k8s.io", "images", "import", archive); err != nil {
		return fmt.Errorf("importing %s into %s's containerd: %v\n%s", archive, n.Name, err, out)
	}
	return nil
}

// ImportImages imports an image archive (docker save's layout, as hack/image.sh writes it)
// into every node's containerd, for Pods with imagePullPolicy: Never. Needs Options.Kubelets.
func (l *Lab) ImportImages(ctx context.Context, archive string) error {
	for _, n := range l.Nodes() {
		if n.runtime == nil {
			return fmt.Errorf("lab: node %s runs no containerd (Options.Kubelets)", n.Name)
		}
		if err := importImages(ctx, n, archive); err != nil {
			return err
		}
	}
	return nil
}

// ContainerdSocket is the address of the node's containerd ("" without
// Options.Kubelets), for ctr --address.
func (n *Node) ContainerdSocket() string {
	if n.runtime == nil {
		return ""
	}
	return n.runtime.socket
}
