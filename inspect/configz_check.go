package inspect

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// ConfigzVerdict is what cross-checking kube-proxy's /configz found.
type ConfigzVerdict string

const (
	// ConfigzConfirmed: the settings agree with what the cluster says
	// kube-proxy runs with.
	ConfigzConfirmed ConfigzVerdict = "Confirmed"
	// ConfigzDisputed: at least one setting differs.
	ConfigzDisputed ConfigzVerdict = "Disputed"
	// ConfigzUnchecked: nothing to compare with (no ConfigMap, no Pod,
	// or reading them is forbidden).
	ConfigzUnchecked ConfigzVerdict = "Unchecked"
)

// ConfigzDispute is one setting /configz and the cluster disagree on.
type ConfigzDispute struct {
	Setting  string
	Configz  string
	Declared string
	// Source is where Declared was read; Default tells that it was not
	// set there, and is kube-proxy's default.
	Source  string
	Default bool
}

// ConfigzCheck is the result of CheckConfigz.
type ConfigzCheck struct {
	Verdict ConfigzVerdict
	// Source is what /configz was compared with.
	Source   string
	Disputes []ConfigzDispute
	// Reason says why the check could not be made (Unchecked).
	Reason string
	// Notes are remarks on a check that was made with less than it
	// wanted (the Pods could not be listed).
	Notes []string
}

// CheckConfigz compares kube-proxy's settings read from /configz, a port
// anything on the host network can bind while kube-proxy is down, with
// what the cluster says the node's kube-proxy runs with: the flags of its
// Pod on the node, or the ConfigMap its --config names, or without such a
// Pod the kube-system/kube-proxy ConfigMap. A forbidden read degrades to
// Unchecked or a note; only other API errors are returned.
func CheckConfigz(ctx context.Context, cs kubernetes.Interface, node string, configz snapshot.ProxyConfig) (ConfigzCheck, error) {
	var notes []string
	kp, err := findKubeProxyPod(ctx, cs, node)
	switch {
	case apierrors.IsForbidden(err):
		notes = append(notes, "cannot list Pods in kube-system (forbidden): kube-proxy's flags on node "+node+" were not read")
	case err != nil:
		return ConfigzCheck{}, err
	}
	declared, source, reason, err := declaredConfig(ctx, cs, node, kp, len(notes) > 0)
	if err != nil {
		return ConfigzCheck{}, err
	}
	if reason != "" {
		if len(notes) > 0 && kp == nil {
			reason = notes[0] + "; " + reason
		}
		return ConfigzCheck{Verdict: ConfigzUnchecked, Reason: reason}, nil
	}
	c := ConfigzCheck{Verdict: ConfigzConfirmed, Source: source, Notes: notes}
	got, _ := effectiveSettings(configz)
	want, defaulted := effectiveSettings(declared)
	for _, s := range got {
		w := want[settingIndex(want, s.name)]
		if w.value == s.value {
			continue
		}
		c.Disputes = append(c.Disputes, ConfigzDispute{Setting: s.name, Configz: s.value, Declared: w.value,
			Source: source, Default: defaulted[s.name]})
	}
	if len(c.Disputes) > 0 {
		c.Verdict = ConfigzDisputed
	}
	return c, nil
}

// declaredConfig is the configuration the cluster says kube-proxy on the
// node runs with, where it was read, or why there is none to compare.
func declaredConfig(ctx context.Context, cs kubernetes.Interface, node string, kp *kubeProxyPod, podsForbidden bool) (snapshot.ProxyConfig, string, string, error) {
	if kp == nil {
		pc, key, reason, err := configMapConfig(ctx, cs, "kube-system", "kube-proxy", "")
		if err != nil || reason != "" {
			if !podsForbidden {
				reason = "no kube-proxy Pod runs on node " + node + " (kube-proxy may run as a system service) and " + reason
			}
			return pc, "", reason, err
		}
		source := "ConfigMap kube-system/kube-proxy (" + key + ")"
		if !podsForbidden {
			source += ", though no kube-proxy Pod runs on node " + node
		}
		return pc, source, "", nil
	}
	pod := "Pod " + kp.namespace + "/" + kp.name
	file, ok, err := kp.value("config")
	if err != nil {
		return snapshot.ProxyConfig{}, "", fmt.Sprintf("the --config of %s: %v", pod, err), nil
	}
	if !ok {
		pc, err := kp.config()
		if err != nil {
			return pc, "", fmt.Sprintf("the flags of %s: %v", pod, err), nil
		}
		return pc, "the flags of " + pod, "", nil
	}
	// kube-proxy ignores the flags that set these when --config is given
	// (cmd/kube-proxy/app/options.go, Complete: the file replaces the
	// configuration the flags were parsed into).
	cm, key, ok := kp.configMapOf(file)
	if !ok {
		return snapshot.ProxyConfig{}, "", fmt.Sprintf("%s reads its configuration from %s, which is not a ConfigMap's file", pod, file), nil
	}
	pc, key, reason, err := configMapConfig(ctx, cs, kp.namespace, cm, key)
	if err != nil || reason != "" {
		return pc, "", reason + " (the --config of " + pod + ")", err
	}
	return pc, fmt.Sprintf("ConfigMap %s/%s (%s), the --config of %s", kp.namespace, cm, key, pod), "", nil
}

// configMapConfig reads a KubeProxyConfiguration from a ConfigMap's key
// (any of the usual keys if key is ""): the configuration, the key, or
// why there is none.
func configMapConfig(ctx context.Context, cs kubernetes.Interface, ns, name, key string) (snapshot.ProxyConfig, string, string, error) {
	what := "ConfigMap " + ns + "/" + name
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return snapshot.ProxyConfig{}, "", "there is no " + what, nil
	case apierrors.IsForbidden(err):
		return snapshot.ProxyConfig{}, "", "reading " + what + " is forbidden", nil
	case err != nil:
		return snapshot.ProxyConfig{}, "", "", fmt.Errorf("reading %s: %w", what, err)
	}
	if key == "" {
		pc, found, err := proxyConfigFromConfigMap(cm)
		if err != nil {
			return pc, "", what + " does not hold a KubeProxyConfiguration svctrace can read", nil
		}
		if !found {
			return pc, "", what + " has no KubeProxyConfiguration key", nil
		}
		return pc, configMapKey(cm), "", nil
	}
	data, ok := cm.Data[key]
	if !ok {
		return snapshot.ProxyConfig{}, "", what + " has no key " + key, nil
	}
	pc, err := ParseKubeProxyConfiguration([]byte(data))
	if err != nil {
		return pc, "", fmt.Sprintf("%s key %s: %v", what, key, err), nil
	}
	return pc, key, "", nil
}

// configMapKey is the key proxyConfigFromConfigMap reads.
func configMapKey(cm *corev1.ConfigMap) string {
	for _, k := range configMapKeys {
		if _, ok := cm.Data[k]; ok {
			return k
		}
	}
	return ""
}

type setting struct{ name, value string }

func settingIndex(s []setting, name string) int {
	return slices.IndexFunc(s, func(x setting) bool { return x.name == name })
}

// effectiveSettings are the settings that reach the rules, as kube-proxy
// on Linux runs with them, in the form compared: an unset field takes
// kube-proxy's default (v1alpha1 SetDefaults_KubeProxyConfiguration and
// platformApplyDefaults in cmd/kube-proxy/app/server_linux.go), lists are
// sorted and their CIDRs in canonical form. defaulted names those unset.
func effectiveSettings(pc snapshot.ProxyConfig) ([]setting, map[string]bool) {
	defaulted := map[string]bool{}
	or := func(name, v, def string) string {
		if v == "" {
			defaulted[name] = true
			return def
		}
		return v
	}
	mode := or("mode", pc.Mode, "iptables")
	nodePorts := cidrList(pc.NodePortAddresses)
	if len(nodePorts) == 0 {
		defaulted["nodePortAddresses"] = true
		nodePorts = plugins.TraitsOf(mode).DefaultNodePortAddresses
	}
	bit := "14"
	if pc.MasqueradeBit != nil {
		bit = strconv.Itoa(int(*pc.MasqueradeBit))
	} else {
		defaulted["masqueradeBit"] = true
	}
	localhost := "true"
	if pc.LocalhostNodePorts != nil {
		localhost = strconv.FormatBool(*pc.LocalhostNodePorts)
	} else {
		defaulted["localhostNodePorts"] = true
	}
	return []setting{
		{"mode", mode},
		{"clusterCIDRs", or("clusterCIDRs", strings.Join(cidrList(pc.ClusterCIDRs), ","), "(none)")},
		{"detectLocalMode", or("detectLocalMode", pc.DetectLocalMode, "ClusterCIDR")},
		{"bridgeInterface", or("bridgeInterface", pc.BridgeInterface, "(none)")},
		{"interfaceNamePrefix", or("interfaceNamePrefix", pc.InterfaceNamePrefix, "(none)")},
		{"masqueradeBit", bit},
		{"masqueradeAll", strconv.FormatBool(pc.MasqueradeAll)},
		{"nodePortAddresses", or("nodePortAddresses", strings.Join(nodePorts, ","), "(all local addresses)")},
		{"localhostNodePorts", localhost},
	}, defaulted
}

// cidrList trims, drops empty entries, writes CIDRs canonically (as
// kube-proxy's net.ParseCIDR reads them) and sorts.
func cidrList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if p, err := netip.ParsePrefix(part); err == nil {
				part = p.Masked().String()
			}
			out = append(out, part)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
