//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// clusterComponents are the binaries a lab with kubelets needs besides the control plane's
// (kubectl for Kubectl).
var clusterComponents = []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kubectl"}

// clusterTools are the host programs a lab with kubelets runs (Debian packages containerd,
// runc and containernetworking-plugins; nsenter from util-linux).
var clusterTools = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "/usr/lib/cni/ptp", "/usr/lib/cni/host-local", "/usr/lib/cni/portmap", "/usr/lib/cni/loopback"}

// requireClusterTools skips (fails under CI) when a program the nodes need is missing.
func requireClusterTools(t TB) {
	t.Helper()
	for _, tool := range clusterTools {
		if _, err := lookTool(tool); err != nil {
			msg := "needs %s (Debian packages containerd, runc, containernetworking-plugins): %v"
			if inCI() {
				t.Fatalf("lab: "+msg, tool, err)
			}
			t.Skipf("lab: "+msg, tool, err)
		}
	}
}

func lookTool(tool string) (string, error) {
	if strings.HasPrefix(tool, "/") {
		if _, err := os.Stat(tool); err != nil {
			return "", err
		}
		return tool, nil
	}
	return exec.LookPath(tool)
}

// clusterAPIServerArgs are kube-apiserver's flags for nodes with kubelets: client certificates
// from the lab CA, the Node authorizer and NodeRestriction admission, ServiceAccount admission
// (the controller manager makes the accounts and their tokens), and a client certificate to
// reach kubelets for exec, logs and port-forward.
func (l *Lab) clusterAPIServerArgs() ([]string, error) {
	dir := filepath.Join(l.Dir, "apiserver-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cert, key, err := l.pki.issue(dir, "apiserver-kubelet-client", certSpec{cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	return []string{
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--client-ca-file=" + l.pki.caFile,
		"--kubelet-client-certificate=" + cert,
		"--kubelet-client-key=" + key,
		"--kubelet-certificate-authority=" + l.pki.caFile,
		"--kubelet-preferred-address-types=InternalIP",
	}, nil
}

// startControllers starts kube-controller-manager (EndpointSlices, Deployments and
// ReplicaSets, DaemonSets, node IPAM and lifecycle, service accounts and their tokens, each
// controller with its own service account as kubeadm sets it up) and kube-scheduler in the
// control-plane namespace.
func (l *Lab) startControllers(bin string) error {
	kcmConf := filepath.Join(l.Dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kcmConf, kubeconfig(l.APIServer, l.pki.caPEM, "system:kube-controller-manager", l.pki.kcmToken), 0o600); err != nil {
		return err
	}
	schedConf := filepath.Join(l.Dir, "kube-scheduler.kubeconfig")
	if err := os.WriteFile(schedConf, kubeconfig(l.APIServer, l.pki.caPEM, "system:kube-scheduler", l.pki.schedToken), 0o600); err != nil {
		return err
	}
	if _, err := l.startProc("kube-controller-manager", l.cpNS, filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+kcmConf,
		"--authentication-kubeconfig="+kcmConf,
		"--authorization-kubeconfig="+kcmConf,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+l.pki.saKeyFile,
		"--root-ca-file="+l.pki.caFile,
		"--cluster-cidr="+ClusterCIDR,
		"--allocate-node-cidrs=true",
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--controllers=*",
		"--v=1",
	); err != nil {
		return err
	}
	_, err := l.startProc("kube-scheduler", l.cpNS, filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+schedConf,
		"--authentication-kubeconfig="+schedConf,
		"--authorization-kubeconfig="+schedConf,
		"--secure-port=0",
		"--leader-elect=false",
		"--v=1",
	)
	return err
}

// startNodes starts containerd and a kubelet on every node and waits until the nodes are
// Ready.
func (l *Lab) startNodes(bin string) error {
	images, err := l.buildImages(l.Dir)
	if err != nil {
		return err
	}
	for _, n := range l.nodes {
		// Not under l.Dir: the kubelet's and containerd's sockets must fit in a socket
		// address (108 bytes), whatever the test's name.
		rt := &nodeRuntime{dir: filepath.Join(os.TempDir(), l.prefix+n.Name), cgroupRoot: "/" + l.prefix + n.Name}
		if err := os.Mkdir(rt.dir, 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		rt.socket = filepath.Join(rt.dir, "containerd.sock")
		l.mu.Lock()
		n.runtime = rt
		l.mu.Unlock()
		if err := makeCgroupRoot(rt.cgroupRoot); err != nil {
			return fmt.Errorf("node %s: cgroup root: %w", n.Name, err)
		}
		if err := l.startContainerd(n, rt, images); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if err := l.startKubelet(bin, n, rt); err != nil {
			return fmt.Errorf("node %s: kubelet: %w", n.Name, err)
		}
	}
	return l.waitNodesReady(3 * time.Minute)
}

// waitNodesReady waits until every node reports Ready.
func (l *Lab) waitNodesReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var waiting []string
		for _, n := range l.nodes {
			if rt := n.runtime; rt != nil && rt.kubelet.exited() {
				b, _ := os.ReadFile(rt.kubelet.log)
				return fmt.Errorf("kubelet of %s exited: %v\n%s", n.Name, rt.kubelet.err, lastLines(string(b), 30))
			}
			ready, why := l.nodeReady(n.Name)
			if !ready {
				waiting = append(waiting, n.Name+" ("+why+")")
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nodes not Ready after %v: %s", timeout, strings.Join(waiting, ", "))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// nodeReady reads the node's Ready condition.
func (l *Lab) nodeReady(name string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := l.api.do(ctx, "GET", "/api/v1/nodes/"+name, "", nil)
	if err != nil {
		return false, err.Error()
	}
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status, Reason, Message string }
		}
	}
	if err := json.Unmarshal(b, &node); err != nil {
		return false, err.Error()
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True", c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition yet"
}
