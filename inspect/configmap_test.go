package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/svctrace/svctrace/snapshot"
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

// TestProxySettings: /configz first, the ConfigMap when it does not
// answer, nothing without an API; the CLI and the agent both take
// kube-proxy's settings so.
func TestProxySettings(t *testing.T) {
	ctx := context.Background()
	kubeadm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy"},
		Data: map[string]string{"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\n"}}
	up := func() (snapshot.ProxyConfig, error) {
		return snapshot.ProxyConfig{Mode: "iptables", Source: "configz"}, nil
	}
	down := func() (snapshot.ProxyConfig, error) {
		return snapshot.ProxyConfig{}, errors.New("kube-proxy's /configz at 127.0.0.1:10249: connection refused")
	}
	if pc, fromConfigz, note, err := ProxySettings(ctx, fake.NewClientset(kubeadm), up); err != nil || !fromConfigz || pc.Mode != "iptables" || note != "" {
		t.Errorf("/configz answering: %+v %v %q %v", pc, fromConfigz, note, err)
	}
	if pc, fromConfigz, _, err := ProxySettings(ctx, fake.NewClientset(kubeadm), down); err != nil || fromConfigz || pc.Mode != "nftables" {
		t.Errorf("the ConfigMap behind a silent /configz: %+v %v %v", pc, fromConfigz, err)
	}
	if pc, fromConfigz, note, err := ProxySettings(ctx, nil, down); err != nil || fromConfigz || pc.Mode != "" || note != "" {
		t.Errorf("no API: %+v %v %q %v", pc, fromConfigz, note, err)
	}
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is on fire")
	})
	if _, _, note, err := ProxySettings(ctx, forbidden, down); err == nil || !strings.Contains(note, "inferred from the rules: kube-proxy's /configz at 127.0.0.1:10249: connection refused; ") {
		t.Errorf("a ConfigMap that cannot be read: note %q, err %v", note, err)
	}
}
