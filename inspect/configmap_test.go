package inspect

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestProxyConfigFromAPIDistributions reads kube-proxy's settings where
// each distribution keeps them: kubeadm's kube-proxy ConfigMap (config.conf);
// EKS's kube-proxy-config (config), beside a kube-proxy ConfigMap that holds
// only a kubeconfig (the shapes of docs/distributions.md); none at all on
// k3s, which says so.
func TestProxyConfigFromAPIDistributions(t *testing.T) {
	cm := func(name, key, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: map[string]string{key: data}}
	}
	eks := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: \"\"\niptables:\n  masqueradeBit: 14\nmode: \"iptables\"\nmetricsBindAddress: 0.0.0.0:10249\n"
	kubeadm := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: nftables\n"
	for _, c := range []struct {
		name     string
		objs     []*corev1.ConfigMap
		mode     string
		noteHas  string
		wantCIDR bool
	}{
		{"kubeadm", []*corev1.ConfigMap{cm("kube-proxy", "config.conf", kubeadm)}, "nftables", "", true},
		{"EKS", []*corev1.ConfigMap{cm("kube-proxy", "kubeconfig", "apiVersion: v1\nkind: Config\n"), cm("kube-proxy-config", "config", eks)}, "iptables", "", false},
		{"k3s", nil, "", "no kube-proxy ConfigMap in kube-system", false},
		{"a kubeconfig alone", []*corev1.ConfigMap{cm("kube-proxy", "kubeconfig", "apiVersion: v1\nkind: Config\n")}, "", "kube-system/kube-proxy holds no KubeProxyConfiguration", false},
	} {
		cs := fake.NewSimpleClientset()
		for _, o := range c.objs {
			if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pc, note, err := ProxyConfigFromAPI(context.Background(), cs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if pc.Mode != c.mode || (len(pc.ClusterCIDRs) > 0) != c.wantCIDR || !strings.Contains(note, c.noteHas) || (c.noteHas == "") != (note == "") {
			t.Errorf("%s: mode %q, cluster CIDRs %v, note %q", c.name, pc.Mode, pc.ClusterCIDRs, note)
		}
	}
}
