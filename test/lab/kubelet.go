//go:build linux

package lab

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// kubeletConfig is a node's KubeletConfiguration. This host mounts cgroup v1 (a hybrid layout),
// which the kubelet refuses since 1.35 unless failCgroupV1 is false; the cgroupfs driver
// matches containerd's runc options (SystemdCgroup = false), and Debian's containerd 1.6 does
// not answer the RuntimeConfig call the kubelet would learn the driver from. The pods of all
// nodes share this host's cgroup tree, each node under its own cgroupRoot. Eviction thresholds
// and image garbage collection are off: the nodes share one disk they did not size, and a
// Pod evicted for another node's use would be a false failure. Swap is tolerated (the host
// may have some), kernel defaults are not enforced (they are the host's), and no graceful
// node shutdown is set up (it needs systemd's inhibitor locks). Each node keeps its Pods' logs
// under its own directory: a kubelet's container GC removes every directory of the logs root
// whose Pod it does not know, so a shared /var/log/pods would lose the other node's logs.
func kubeletConfig(l *Lab, n *Node, rt *nodeRuntime, certFile, keyFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %[2]s
tlsPrivateKeyFile: %[3]s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[5]s
containerRuntimeEndpoint: unix://%[6]s
failSwapOn: false
protectKernelDefaults: false
resolvConf: %[7]s
clusterDomain: cluster.local
podCIDR: %[8]s
maxPods: 60
registerNode: true
nodeStatusUpdateFrequency: 4s
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
shutdownGracePeriod: 0s
podLogsDir: %[9]s
`, n.IP, certFile, keyFile, l.pki.caFile, rt.cgroupRoot, rt.socket, filepath.Join(rt.dir, "resolv.conf"), n.PodCIDR,
		rt.podLogs())
}

// startKubelet starts the node's kubelet with its own credentials: a client certificate for
// system:node:<name> in system:nodes (what the Node authorizer and NodeRestriction admission
// check) and a serving certificate for its address, both from the lab CA.
func (l *Lab) startKubelet(bin string, n *Node, rt *nodeRuntime) error {
	pkiDir := filepath.Join(rt.dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	clientCert, clientKey, err := l.pki.issue(pkiDir, "kubelet-client", certSpec{cn: "system:node:" + n.Name, orgs: []string{"system:nodes"}})
	if err != nil {
		return err
	}
	servingCert, servingKey, err := l.pki.issue(pkiDir, "kubelet-serving", certSpec{
		cn: n.Name, ips: []net.IP{net.ParseIP(n.IP)}, dns: []string{n.Name}, server: true})
	if err != nil {
		return err
	}
	kc := filepath.Join(rt.dir, "kubelet.kubeconfig")
	if err := os.WriteFile(kc, certKubeconfig(l.APIServer, l.pki.caPEM, "system:node:"+n.Name, clientCert, clientKey), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rt.dir, "resolv.conf"), []byte("nameserver 127.0.0.1\noptions ndots:1\n"), 0o644); err != nil {
		return err
	}
	conf := filepath.Join(rt.dir, "kubelet.yaml")
	if err := os.WriteFile(conf, []byte(kubeletConfig(l, n, rt, servingCert, servingKey)), 0o644); err != nil {
		return err
	}
	p, err := l.startHostMountsProc(n.Name+"-kubelet", n.NetNS, filepath.Join(bin, "kubelet"),
		"--config="+conf,
		"--kubeconfig="+kc,
		"--root-dir="+filepath.Join(rt.dir, "kubelet"),
		"--cert-dir="+pkiDir,
		"--hostname-override="+n.Name,
		"--node-ip="+n.IP,
		"--v=2",
	)
	if err != nil {
		return err
	}
	rt.kubelet = p
	return nil
}
