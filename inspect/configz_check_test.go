package inspect

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/snapshot"
)

// kubeadmObjects are the kube-proxy ConfigMap and Pod of a kubeadm-shaped
// cluster (testdata/configz_check/kubeadm-objects.yaml says where from).
func kubeadmObjects(t *testing.T) (*corev1.ConfigMap, *corev1.Pod) {
	t.Helper()
	data, err := os.ReadFile("testdata/configz_check/kubeadm-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	var cm corev1.ConfigMap
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cm); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &pod); err != nil {
		t.Fatal(err)
	}
	return &cm, &pod
}

// realConfigz is what kube-proxy v1.36.3 served on /configz in the lab,
// run by that Pod with that ConfigMap (mode "" as kubeadm writes it), or
// with mode: nftables in it.
func realConfigz(t *testing.T, mode string, edit func(c map[string]any)) snapshot.ProxyConfig {
	t.Helper()
	data, err := os.ReadFile("testdata/configz_check/kubeadm-" + mode + "-configz.json")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var doc map[string]map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc["kubeproxy.config.k8s.io"])
		if data, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := ParseKubeProxyConfiguration(data)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

func checkConfigz(t *testing.T, configz snapshot.ProxyConfig, objs ...runtime.Object) ConfigzCheck {
	t.Helper()
	c, err := CheckConfigz(context.Background(), fake.NewClientset(objs...), "node1", configz)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCheckConfigzKubeadmDefaults: kubeadm's ConfigMap leaves mode,
// detectLocalMode, masqueradeBit, localhostNodePorts and
// nodePortAddresses unset, which /configz shows defaulted: agreement.
func TestCheckConfigzKubeadmDefaults(t *testing.T) {
	cm, pod := kubeadmObjects(t)
	c := checkConfigz(t, realConfigz(t, "iptables", nil), cm, pod)
	if c.Verdict != ConfigzConfirmed || len(c.Disputes) > 0 {
		t.Fatalf("%+v, want Confirmed", c)
	}
	want := "ConfigMap kube-system/kube-proxy (config.conf), the --config of Pod kube-system/" + pod.Name
	if c.Source != want {
		t.Errorf("source %q, want %q", c.Source, want)
	}

	// In nftables mode kube-proxy defaults nodePortAddresses to primary.
	nft := cm.DeepCopy()
	nft.Data["config.conf"] = strings.Replace(nft.Data["config.conf"], `mode: ""`, "mode: nftables", 1)
	if c := checkConfigz(t, realConfigz(t, "nftables", nil), nft, pod); c.Verdict != ConfigzConfirmed {
		t.Errorf("nftables: %+v, want Confirmed", c)
	}
	// clusterCIDR: "" is unset, as /configz's "".
	empty := cm.DeepCopy()
	empty.Data["config.conf"] = strings.Replace(empty.Data["config.conf"], "clusterCIDR: 172.17.0.0/16", `clusterCIDR: ""`, 1)
	noCIDR := realConfigz(t, "iptables", func(c map[string]any) { c["clusterCIDR"] = "" })
	if c := checkConfigz(t, noCIDR, empty, pod); c.Verdict != ConfigzConfirmed {
		t.Errorf("empty clusterCIDR: %+v, want Confirmed", c)
	}
}

// TestCheckConfigzForged: a /configz served by something else than
// kube-proxy, with a bridge detector the cluster never set.
func TestCheckConfigzForged(t *testing.T) {
	cm, pod := kubeadmObjects(t)
	forged := realConfigz(t, "iptables", func(c map[string]any) {
		c["detectLocalMode"] = "BridgeInterface"
		c["detectLocal"] = map[string]any{"bridgeInterface": "cni0", "interfaceNamePrefix": ""}
		c["iptables"].(map[string]any)["masqueradeBit"] = 13
	})
	c := checkConfigz(t, forged, cm, pod)
	if c.Verdict != ConfigzDisputed {
		t.Fatalf("%+v, want Disputed", c)
	}
	want := []ConfigzDispute{
		{Setting: "detectLocalMode", Configz: "BridgeInterface", Declared: "ClusterCIDR", Default: true},
		{Setting: "bridgeInterface", Configz: "cni0", Declared: "(none)", Default: true},
		{Setting: "masqueradeBit", Configz: "13", Declared: "14", Default: true},
	}
	for i := range c.Disputes {
		if !strings.Contains(c.Disputes[i].Source, "ConfigMap kube-system/kube-proxy") {
			t.Errorf("dispute %d source %q", i, c.Disputes[i].Source)
		}
		c.Disputes[i].Source = ""
	}
	if !slices.Equal(c.Disputes, want) {
		t.Errorf("disputes %+v, want %+v", c.Disputes, want)
	}
}

// gcePod is kube-proxy as a static Pod whose flags carry its settings,
// in the shape of kubernetes' cluster/gce/manifests/kube-proxy.manifest
// as cluster/gce/gci/configure-helper.sh fills it in (iptables mode,
// CLUSTER_IP_RANGE 10.64.0.0/14): sh -c "exec kube-proxy ...".
func gcePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metaNamed("kube-system", "kube-proxy-node1"),
		Spec: corev1.PodSpec{NodeName: "node1", HostNetwork: true, Containers: []corev1.Container{{
			Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy-amd64:v1.36.3",
			Command: []string{"/bin/sh", "-c", "exec kube-proxy --master=https://kubernetes-master --kubeconfig=/var/lib/kube-proxy/kubeconfig " +
				"--cluster-cidr=10.64.0.0/14 --oom-score-adj=-998 --v=2 --proxy-mode=iptables --iptables-sync-period=1m " +
				"--iptables-min-sync-period=10s 1>>/var/log/kube-proxy.log 2>&1"},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// TestCheckConfigzFlags: without --config, the Pod's flags are what
// kube-proxy runs with, whatever the ConfigMap says; with --config,
// kube-proxy ignores them (cmd/kube-proxy/app/options.go, Complete).
func TestCheckConfigzFlags(t *testing.T) {
	cm, pod := kubeadmObjects(t)
	fromFlags := realConfigz(t, "iptables", func(c map[string]any) { c["clusterCIDR"] = "10.64.0.0/14" })
	// The Pod of another node, newer, is not this node's.
	other := gcePod()
	other.Name, other.Spec.NodeName, other.CreationTimestamp = "kube-proxy-node2", "node2", metav1.Now()
	other.Spec.Containers[0].Command[2] = strings.Replace(other.Spec.Containers[0].Command[2], "10.64.0.0/14", "10.96.0.0/14", 1)
	c := checkConfigz(t, fromFlags, cm, gcePod(), other)
	if c.Verdict != ConfigzConfirmed || c.Source != "the flags of Pod kube-system/kube-proxy-node1" {
		t.Errorf("flags agree: %+v", c)
	}
	c = checkConfigz(t, realConfigz(t, "iptables", nil), cm, gcePod())
	if c.Verdict != ConfigzDisputed || len(c.Disputes) != 1 || c.Disputes[0].Declared != "10.64.0.0/14" || c.Disputes[0].Configz != "172.17.0.0/16" {
		t.Errorf("flags disagree: %+v", c)
	}

	ignored := pod.DeepCopy()
	ignored.Spec.Containers[0].Command = append(ignored.Spec.Containers[0].Command, "--cluster-cidr=10.64.0.0/14", "--detect-local-mode", "BridgeInterface")
	if c := checkConfigz(t, realConfigz(t, "iptables", nil), cm, ignored); c.Verdict != ConfigzConfirmed {
		t.Errorf("flags beside --config: %+v, want Confirmed", c)
	}
}

// eksObjects are kube-proxy in EKS's layout: the DaemonSet's command
// (kubernetes/kubernetes#61486, the EKS patch there) reads --config from
// the ConfigMap kube-proxy-config mounted at /var/lib/kube-proxy-config/,
// beside kube-system/kube-proxy holding only a kubeconfig (mounts as in
// an EKS DaemonSet published in elotl's milpa scripts). The configuration
// body is in the v1alpha1 form EKS writes, with clusterCIDR "".
func eksObjects() []runtime.Object {
	config := `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
clientConnection:
  acceptContentTypes: ""
  burst: 10
  contentType: application/vnd.kubernetes.protobuf
  kubeconfig: /var/lib/kube-proxy/kubeconfig
  qps: 5
clusterCIDR: ""
configSyncPeriod: 15m0s
conntrack:
  maxPerCore: 32768
  min: 131072
  tcpCloseWaitTimeout: 1h0m0s
  tcpEstablishedTimeout: 24h0m0s
enableProfiling: false
healthzBindAddress: 0.0.0.0:10256
hostnameOverride: ""
iptables:
  masqueradeAll: false
  masqueradeBit: 14
  minSyncPeriod: 0s
  syncPeriod: 30s
kind: KubeProxyConfiguration
metricsBindAddress: 0.0.0.0:10249
mode: "iptables"
nodePortAddresses: null
oomScoreAdj: -998
portRange: ""
`
	cmVolume := func(name, cm string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
	}
	return []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metaNamed("kube-system", "kube-proxy"), Data: map[string]string{"kubeconfig": "kind: Config\n"}},
		&corev1.ConfigMap{ObjectMeta: metaNamed("kube-system", "kube-proxy-config"), Data: map[string]string{"config": config}},
		&corev1.Pod{ObjectMeta: metaNamed("kube-system", "kube-proxy-8x6zq"), Spec: corev1.PodSpec{NodeName: "node1", HostNetwork: true,
			Containers: []corev1.Container{{Name: "kube-proxy",
				Command:      []string{"kube-proxy", "--hostname-override=$(NODE_NAME)", "--v=2", "--config=/var/lib/kube-proxy-config/config"},
				Env:          []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: "/var/lib/kube-proxy/"}, {Name: "config", MountPath: "/var/lib/kube-proxy-config/"}},
			}},
			Volumes: []corev1.Volume{cmVolume("kubeconfig", "kube-proxy"), cmVolume("config", "kube-proxy-config")},
		}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	}
}

// TestCheckConfigzEKS: the ConfigMap compared is the one the Pod's
// --config reads, not kube-system/kube-proxy.
func TestCheckConfigzEKS(t *testing.T) {
	eks := realConfigz(t, "iptables", func(c map[string]any) { c["clusterCIDR"] = "" })
	c := checkConfigz(t, eks, eksObjects()...)
	if c.Verdict != ConfigzConfirmed || c.Source != "ConfigMap kube-system/kube-proxy-config (config), the --config of Pod kube-system/kube-proxy-8x6zq" {
		t.Errorf("%+v, want Confirmed by kube-proxy-config", c)
	}
	forged := realConfigz(t, "iptables", func(c map[string]any) {
		c["clusterCIDR"] = ""
		c["iptables"].(map[string]any)["masqueradeAll"] = true
	})
	c = checkConfigz(t, forged, eksObjects()...)
	if c.Verdict != ConfigzDisputed || len(c.Disputes) != 1 || c.Disputes[0].Setting != "masqueradeAll" || c.Disputes[0].Default {
		t.Errorf("%+v, want masqueradeAll disputed", c)
	}
}

// TestCheckConfigzNothingToCompare: kube-proxy as a system service
// (no Pod, no ConfigMap), or reading a host file: a note, no failure.
func TestCheckConfigzNothingToCompare(t *testing.T) {
	c := checkConfigz(t, realConfigz(t, "iptables", nil))
	if c.Verdict != ConfigzUnchecked || !strings.Contains(c.Reason, "no kube-proxy Pod runs on node node1") || !strings.Contains(c.Reason, "no ConfigMap kube-system/kube-proxy") {
		t.Errorf("%+v, want Unchecked naming the missing Pod and ConfigMap", c)
	}
	cm, pod := kubeadmObjects(t)
	host := pod.DeepCopy()
	host.Spec.Volumes[0] = corev1.Volume{Name: "kube-proxy", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kube-proxy"}}}
	c = checkConfigz(t, realConfigz(t, "iptables", nil), cm, host)
	if c.Verdict != ConfigzUnchecked || !strings.Contains(c.Reason, "/var/lib/kube-proxy/config.conf, which is not a ConfigMap's file") {
		t.Errorf("hostPath config: %+v, want Unchecked", c)
	}
	// No Pod on the node, but the ConfigMap: compared with it.
	if c := checkConfigz(t, realConfigz(t, "iptables", nil), cm); c.Verdict != ConfigzConfirmed || !strings.Contains(c.Source, "no kube-proxy Pod runs on node node1") {
		t.Errorf("ConfigMap only: %+v", c)
	}
}

// TestCheckConfigzForbidden: RBAC that forbids the Pods or the ConfigMap
// degrades to notes; another API error is an error.
func TestCheckConfigzForbidden(t *testing.T) {
	cm, pod := kubeadmObjects(t)
	failing := func(resource string, err error) *fake.Clientset {
		cs := fake.NewClientset(cm, pod)
		cs.PrependReactor("*", resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
		return cs
	}
	forbidden := func(resource string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", nil)
	}
	ctx := context.Background()
	c, err := CheckConfigz(ctx, failing("pods", forbidden("pods")), "node1", realConfigz(t, "iptables", nil))
	if err != nil || c.Verdict != ConfigzConfirmed || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "forbidden") {
		t.Errorf("pods forbidden: %+v %v, want Confirmed by the ConfigMap with a note", c, err)
	}
	c, err = CheckConfigz(ctx, failing("configmaps", forbidden("configmaps")), "node1", realConfigz(t, "iptables", nil))
	if err != nil || c.Verdict != ConfigzUnchecked || !strings.Contains(c.Reason, "reading ConfigMap kube-system/kube-proxy is forbidden") {
		t.Errorf("configmap forbidden: %+v %v, want Unchecked", c, err)
	}
	both := failing("configmaps", forbidden("configmaps"))
	both.PrependReactor("*", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden("pods") })
	c, err = CheckConfigz(ctx, both, "node1", realConfigz(t, "iptables", nil))
	if err != nil || c.Verdict != ConfigzUnchecked || strings.Count(c.Reason, "forbidden") != 2 {
		t.Errorf("both forbidden: %+v %v, want Unchecked naming both", c, err)
	}
	_, err = CheckConfigz(ctx, failing("pods", apierrors.NewInternalError(os.ErrDeadlineExceeded)), "node1", realConfigz(t, "iptables", nil))
	if err == nil || !strings.Contains(err.Error(), "listing Pods in kube-system on node node1") {
		t.Errorf("internal error: %v, want it returned with context", err)
	}
}

func metaNamed(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
