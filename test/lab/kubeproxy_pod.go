//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/svctrace/svctrace/internal/ociimage"
)

// The kube-proxy image holds the kube-proxy binary of a version and the kernel tools it runs,
// from Debian packages (this machine's release): iptables (both backends, with the nf_tables
// one as `iptables`, Debian's default), nft, conntrack and ipset.
var kubeProxyImagePackages = []string{"iptables", "nftables", "conntrack", "ipset"}

// KubeProxyImage names the lab's kube-proxy image of a version.
func KubeProxyImage(version string) string { return "svctrace.local/lab/kube-proxy:" + version }

// buildKubeProxyImage returns the archive of the kube-proxy image of version, built on first use.
func buildKubeProxyImage(ctx context.Context, version string) (string, error) {
	bin, err := ensureBinaries(version, "kube-proxy")
	if err != nil {
		return "", err
	}
	binPath := filepath.Join(bin, "kube-proxy")
	// Cached by version beside the binaries, until the binary is rebuilt.
	path := filepath.Join(bin, "kube-proxy-image.tar")
	if a, err := os.Stat(path); err == nil {
		if b, err := os.Stat(binPath); err == nil && !a.ModTime().Before(b.ModTime()) {
			return path, nil
		}
	}
	proxy, err := os.ReadFile(binPath)
	if err != nil {
		return "", err
	}
	files, taken, err := ociimage.KernelTools(ctx, filepath.Join(CacheDir(), "debs"), kubeProxyImagePackages...)
	if err != nil {
		return "", fmt.Errorf("kube-proxy image: %w", err)
	}
	files = append(files, ociimage.File{Path: "/usr/local/bin/kube-proxy", Mode: 0o755, Data: proxy})
	img, err := ociimage.Build(ociimage.Spec{
		Files:      files,
		Entrypoint: []string{"/usr/local/bin/kube-proxy"},
		Env:        []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Labels:     map[string]string{"dev.svctrace.lab.debian-packages": strings.Join(taken, " ")},
	})
	if err != nil {
		return "", err
	}
	// Written aside and renamed: test binaries running at once may build it together.
	f, err := os.CreateTemp(bin, "kube-proxy-image-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := ociimage.WriteArchive(f, map[string]v1.Image{KubeProxyImage(version): img}); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(f.Name(), path)
}

// kubeProxyManifests are kube-proxy's objects as kubeadm makes them: its ServiceAccount bound
// to system:node-proxier, a ConfigMap with the KubeProxyConfiguration and a kubeconfig that
// uses the account's token, and a DaemonSet on the host network running the lab's image.
func kubeProxyManifests(l *Lab, version, mode string, config string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-proxy, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:node-proxier"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node-proxier"}
subjects:
- {kind: ServiceAccount, name: kube-proxy, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-proxy, namespace: kube-system, labels: {app: kube-proxy}}
data:
  config.conf: |
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    clientConnection:
      kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
    mode: %[2]s
    clusterCIDR: %[3]s
    metricsBindAddress: %[4]s
    healthzBindAddress: 0.0.0.0:10256
    conntrack:
      maxPerCore: 0
%[5]s
  kubeconfig.conf: |
    apiVersion: v1
    kind: Config
    clusters:
    - cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: %[6]s
      name: default
    contexts:
    - context: {cluster: default, namespace: default, user: default}
      name: default
    current-context: default
    users:
    - name: default
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-proxy, namespace: kube-system, labels: {k8s-app: kube-proxy}}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy}}
  updateStrategy: {type: RollingUpdate}
  template:
    metadata: {labels: {k8s-app: kube-proxy}}
    spec:
      hostNetwork: true
      priorityClassName: system-node-critical
      # StopKubeProxyPod labels a node to take kube-proxy off it, as an operator would.
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: %[7]s, operator: DoesNotExist}]
      serviceAccountName: kube-proxy
      tolerations: [{operator: Exists}]
      containers:
      - name: kube-proxy
        image: %[1]s
        imagePullPolicy: Never
        command: [/usr/local/bin/kube-proxy, --config=/var/lib/kube-proxy/config.conf, --hostname-override=$(NODE_NAME)]
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        securityContext: {privileged: true}
        volumeMounts:
        - {name: kube-proxy, mountPath: /var/lib/kube-proxy}
        - {name: xtables-lock, mountPath: /run/xtables.lock}
        - {name: lib-modules, mountPath: /lib/modules, readOnly: true}
      volumes:
      - name: kube-proxy
        configMap: {name: kube-proxy}
      - name: xtables-lock
        hostPath: {path: /run/xtables.lock, type: FileOrCreate}
      - name: lib-modules
        hostPath: {path: /lib/modules}
`, KubeProxyImage(version), mode, ClusterCIDR, metricsAddr, indent(config, "    "), l.APIServer, noKubeProxyLabel)
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// DeployKubeProxy runs kube-proxy (Lab.ProxyVersion) as a DaemonSet in mode "iptables" or
// "nftables", configured by a ConfigMap as kubeadm does; config holds more
// KubeProxyConfiguration fields (YAML, may be ""). The image is built here and imported into
// every node's containerd. It waits until each node's kube-proxy has synced. Needs
// Options.Kubelets.
func (l *Lab) DeployKubeProxy(mode, config string) error {
	if !l.kubelets {
		return fmt.Errorf("lab: DeployKubeProxy needs Options.Kubelets")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	archive, err := buildKubeProxyImage(ctx, l.ProxyVersion)
	if err != nil {
		return err
	}
	if err := l.ImportImages(ctx, archive); err != nil {
		return err
	}
	if err := l.ApplyE(ctx, kubeProxyManifests(l, l.ProxyVersion, mode, config)); err != nil {
		return err
	}
	l.mu.Lock()
	for _, n := range l.nodes {
		n.proxyPod = true
	}
	l.mu.Unlock()
	if out, err := l.Kubectl(ctx, "-n", "kube-system", "rollout", "status", "daemonset/kube-proxy", "--timeout=3m"); err != nil {
		logs, _ := l.Kubectl(ctx, "-n", "kube-system", "logs", "-l", "k8s-app=kube-proxy", "--tail=20")
		return fmt.Errorf("kube-proxy DaemonSet: %v\n%s\n%s", err, out, logs)
	}
	for _, n := range l.Nodes() {
		if err := l.WaitSynced(n.Name); err != nil {
			return fmt.Errorf("kube-proxy on %s: %w", n.Name, err)
		}
	}
	return nil
}

// noKubeProxyLabel on a node keeps the kube-proxy DaemonSet off it.
const noKubeProxyLabel = "lab.svctrace.dev/no-kube-proxy"

// StopKubeProxyPod takes the kube-proxy Pod off node (DeployKubeProxy's DaemonSet), by a node
// label its affinity excludes, and waits until the Pod is gone; the node's rules stay, as
// they do when kube-proxy stops.
func (l *Lab) StopKubeProxyPod(node string) error {
	return l.setKubeProxyPod(node, false)
}

// StartKubeProxyPod puts the kube-proxy Pod back on node and waits for its first sync.
func (l *Lab) StartKubeProxyPod(node string) error {
	return l.setKubeProxyPod(node, true)
}

func (l *Lab) setKubeProxyPod(node string, on bool) error {
	n := l.Node(node)
	if n == nil {
		return fmt.Errorf("lab: no node %q", node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	label := `"` + noKubeProxyLabel + `": "true"`
	if on {
		label = `"` + noKubeProxyLabel + `": null`
	}
	if _, err := l.Request(ctx, "PATCH", "/api/v1/nodes/"+node, "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{`+label+`}}}`)); err != nil {
		return err
	}
	for {
		out, err := l.Kubectl(ctx, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy",
			"--field-selector=spec.nodeName="+node, "-o", `jsonpath={range .items[*]}{.status.phase},{.metadata.deletionTimestamp} {end}`)
		if err == nil {
			pods := strings.Fields(out)
			if !on && len(pods) == 0 || on && len(pods) == 1 && pods[0] == "Running," {
				break
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab: kube-proxy Pod on %s: %q, %v", node, out, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	l.mu.Lock()
	n.proxyPod = on
	l.mu.Unlock()
	if on {
		return l.WaitSynced(node)
	}
	return nil
}
