package inspect

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestKubeProxyArgs(t *testing.T) {
	args, ok := kubeProxyArgs(&gcePod().Spec.Containers[0])
	if !ok || args[len(args)-1] != "--iptables-min-sync-period=10s" || args[0] != "--master=https://kubernetes-master" {
		t.Errorf("sh -c: %q %v", args, ok)
	}
	flags := parseFlags([]string{"--masquerade-all", "--proxy-mode", "ipvs", "--nodeport-addresses=10.0.0.0/8", "--nodeport-addresses", "192.0.2.0/24,198.51.100.0/24", "--", "--proxy-mode=nftables"})
	kp := &kubeProxyPod{container: &corev1.Container{Env: []corev1.EnvVar{{Name: "CIDR", Value: "10.244.0.0/16"}}}, flags: flags}
	kp.flags["cluster-cidr"] = []string{"$(CIDR)"}
	pc, err := kp.config()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Mode != "ipvs" || !pc.MasqueradeAll || len(pc.NodePortAddresses) != 3 || pc.ClusterCIDRs[0] != "10.244.0.0/16" {
		t.Errorf("config %+v", pc)
	}
	kp.flags["cluster-cidr"] = []string{"$(POD_CIDR)"}
	if _, err := kp.config(); err == nil || !strings.Contains(err.Error(), "--cluster-cidr") {
		t.Errorf("unresolved variable: %v", err)
	}
}

// TestConfigMapOf: --config's file through a directory mount, a subPath
// mount, items mapping keys to paths, and a projected volume.
func TestConfigMapOf(t *testing.T) {
	kp := &kubeProxyPod{
		container: &corev1.Container{VolumeMounts: []corev1.VolumeMount{
			{Name: "dir", MountPath: "/var/lib/kube-proxy/"},
			{Name: "items", MountPath: "/etc/kp"},
			{Name: "sub", MountPath: "/etc/kube-proxy.yaml", SubPath: "kube-proxy.conf"},
			{Name: "projected", MountPath: "/etc/projected"},
			{Name: "host", MountPath: "/etc/host"},
		}},
		volumes: []corev1.Volume{
			{Name: "dir", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-proxy"}}}},
			{Name: "items", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kp"},
				Items: []corev1.KeyToPath{{Key: "config.yaml", Path: "conf/proxy.yaml"}}}}},
			{Name: "sub", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sub"}}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}}},
			}}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes"}}},
		},
	}
	for file, want := range map[string]string{
		"/var/lib/kube-proxy/config.conf":  "kube-proxy config.conf",
		"/var/lib/kube-proxy/../x/a":       "",
		"/etc/kp/conf/proxy.yaml":          "kp config.yaml",
		"/etc/kp/other.yaml":               "",
		"/etc/kube-proxy.yaml":             "sub kube-proxy.conf",
		"/etc/projected/config.conf":       "proj config.conf",
		"/etc/host/kube-proxy-config.yaml": "",
	} {
		name, key, ok := kp.configMapOf(file)
		got := ""
		if ok {
			got = name + " " + key
		}
		if got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}
}
