package inspect

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/svctrace/snapshot"
)

// kubeProxyPod is the Pod running kube-proxy on a node, with the flags
// of its kube-proxy command.
type kubeProxyPod struct {
	namespace, name string
	container       *corev1.Container
	volumes         []corev1.Volume
	// flags holds every value each flag was given, in order.
	flags map[string][]string
}

// kube-proxy's boolean flags: given alone they take no value.
var kubeProxyBoolFlags = map[string]bool{
	"masquerade-all": true, "iptables-localhost-nodeports": true, "cleanup": true, "init-only": true,
	"bind-address-hard-fail": true, "profiling": true, "ipvs-strict-arp": true, "conntrack-tcp-be-liberal": true,
	"alsologtostderr": true, "logtostderr": true, "add_dir_header": true, "skip_headers": true,
	"skip_log_headers": true, "one_output": true, "help": true, "version": true,
}

// findKubeProxyPod finds the Pod in kube-system on the node whose
// container runs kube-proxy, preferring a running one, then the newest.
// It is nil when there is none.
func findKubeProxyPod(ctx context.Context, cs kubernetes.Interface, node string) (*kubeProxyPod, error) {
	list, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("listing Pods in kube-system on node %s: %w", node, err)
	}
	var best *kubeProxyPod
	var bestPod *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for j := range p.Spec.Containers {
			args, ok := kubeProxyArgs(&p.Spec.Containers[j])
			if !ok {
				continue
			}
			if bestPod != nil && !betterPod(p, bestPod) {
				break
			}
			best = &kubeProxyPod{namespace: p.Namespace, name: p.Name, container: &p.Spec.Containers[j],
				volumes: p.Spec.Volumes, flags: parseFlags(args)}
			bestPod = p
			break
		}
	}
	return best, nil
}

func betterPod(p, than *corev1.Pod) bool {
	running, thanRunning := p.Status.Phase == corev1.PodRunning, than.Status.Phase == corev1.PodRunning
	if running != thanRunning {
		return running
	}
	return than.CreationTimestamp.Before(&p.CreationTimestamp)
}

// kubeProxyArgs are the arguments a container gives kube-proxy: after
// the kube-proxy binary in its command and args, also in a shell's
// command line (sh -c "kube-proxy ... 1>>/var/log/kube-proxy.log"), or
// the args of a container named kube-proxy that sets no command (the
// image's entrypoint).
func kubeProxyArgs(c *corev1.Container) ([]string, bool) {
	argv := append(slices.Clone(c.Command), c.Args...)
	for i, a := range argv {
		if !strings.HasPrefix(a, "-") && path.Base(a) == "kube-proxy" {
			return argv[i+1:], true
		}
		if !strings.ContainsAny(a, " \t\n") {
			continue
		}
		words := strings.Fields(a)
		for k, w := range words {
			if w = strings.Trim(w, `"'`); strings.HasPrefix(w, "-") || path.Base(w) != "kube-proxy" {
				continue
			}
			var out []string
			for _, w := range words[k+1:] {
				if strings.ContainsAny(w[:1], "><|;&") || strings.HasPrefix(w, "1>") || strings.HasPrefix(w, "2>") {
					break
				}
				out = append(out, strings.Trim(w, `"'`))
			}
			return out, true
		}
	}
	if len(c.Command) == 0 && c.Name == "kube-proxy" {
		return c.Args, true
	}
	return nil, false
}

// parseFlags reads --name=value, --name value and a boolean --name, as
// pflag does, up to a "--".
func parseFlags(args []string) map[string][]string {
	flags := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue {
			switch {
			case kubeProxyBoolFlags[name]:
				value = "true"
			case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
				i++
				value = args[i]
			}
		}
		flags[name] = append(flags[name], value)
	}
	return flags
}

// value is a flag's last value with the container's $(VAR) references
// expanded as the kubelet does; an error if one cannot be resolved here.
func (kp *kubeProxyPod) value(name string) (string, bool, error) {
	vs, ok := kp.flags[name]
	if !ok {
		return "", false, nil
	}
	v, err := kp.expand(vs[len(vs)-1])
	return v, true, err
}

func (kp *kubeProxyPod) expand(v string) (string, error) {
	for strings.Contains(v, "$(") {
		start := strings.Index(v, "$(")
		end := strings.Index(v[start:], ")")
		if end < 0 {
			return "", fmt.Errorf("unterminated $( in %q", v)
		}
		name := v[start+2 : start+end]
		i := slices.IndexFunc(kp.container.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 || kp.container.Env[i].ValueFrom != nil {
			return "", fmt.Errorf("%q refers to $(%s), which is not a literal variable of the container", v, name)
		}
		v = v[:start] + kp.container.Env[i].Value + v[start+end+1:]
	}
	return v, nil
}

// config is the configuration the flags give kube-proxy when no --config
// file replaces them. Unset fields keep kube-proxy's defaults.
func (kp *kubeProxyPod) config() (snapshot.ProxyConfig, error) {
	var pc snapshot.ProxyConfig
	for name, dst := range map[string]*string{"proxy-mode": &pc.Mode, "detect-local-mode": &pc.DetectLocalMode,
		"pod-bridge-interface": &pc.BridgeInterface, "pod-interface-name-prefix": &pc.InterfaceNamePrefix} {
		v, _, err := kp.value(name)
		if err != nil {
			return pc, fmt.Errorf("--%s: %w", name, err)
		}
		*dst = v
	}
	if v, ok, err := kp.value("cluster-cidr"); err != nil {
		return pc, fmt.Errorf("--cluster-cidr: %w", err)
	} else if ok {
		pc.ClusterCIDRs = cidrList([]string{v})
	}
	if v, ok, err := kp.value("masquerade-all"); err != nil || ok {
		if pc.MasqueradeAll, err = parseBoolFlag(v, err); err != nil {
			return pc, fmt.Errorf("--masquerade-all: %w", err)
		}
	}
	if v, ok, err := kp.value("iptables-localhost-nodeports"); err != nil || ok {
		b, err := parseBoolFlag(v, err)
		if err != nil {
			return pc, fmt.Errorf("--iptables-localhost-nodeports: %w", err)
		}
		pc.LocalhostNodePorts = &b
	}
	if v, ok, err := kp.value("iptables-masquerade-bit"); err != nil || ok {
		n, perr := strconv.ParseInt(v, 10, 32)
		if err != nil || perr != nil {
			return pc, fmt.Errorf("--iptables-masquerade-bit %q: not a number", v)
		}
		bit := int32(n)
		pc.MasqueradeBit = &bit
	}
	// A string slice flag given more than once adds to its values.
	for _, v := range kp.flags["nodeport-addresses"] {
		v, err := kp.expand(v)
		if err != nil {
			return pc, fmt.Errorf("--nodeport-addresses: %w", err)
		}
		pc.NodePortAddresses = append(pc.NodePortAddresses, cidrList([]string{v})...)
	}
	if pc.Mode == "" {
		pc.Mode = "iptables"
	}
	return pc, nil
}

func parseBoolFlag(v string, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	b, perr := strconv.ParseBool(v)
	if perr != nil {
		return false, fmt.Errorf("%q is not a boolean", v)
	}
	return b, nil
}

// configMapOf names the ConfigMap and key behind a file of the container,
// through the volume mounted at the file or a directory above it.
func (kp *kubeProxyPod) configMapOf(file string) (name, key string, ok bool) {
	file = path.Clean(file)
	var mount *corev1.VolumeMount
	rel := ""
	for i := range kp.container.VolumeMounts {
		m := &kp.container.VolumeMounts[i]
		mp := path.Clean(m.MountPath)
		r, inside := strings.CutPrefix(file, strings.TrimSuffix(mp, "/")+"/")
		if file == mp {
			r, inside = "", m.SubPath != ""
		}
		if inside && (mount == nil || len(mp) > len(path.Clean(mount.MountPath))) {
			// A subPath mount shows that path of the volume.
			mount, rel = m, path.Join(m.SubPath, r)
		}
	}
	if mount == nil {
		return "", "", false
	}
	i := slices.IndexFunc(kp.volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	if i < 0 {
		return "", "", false
	}
	// A ConfigMap volume, or ConfigMaps among a projected volume's
	// sources: an item mapped to the file, else a ConfigMap whose keys
	// are all files of the volume.
	var sources []*corev1.ConfigMapProjection
	if v := kp.volumes[i]; v.ConfigMap != nil {
		sources = append(sources, &corev1.ConfigMapProjection{LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items})
	} else if v.Projected != nil {
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				sources = append(sources, src.ConfigMap)
			}
		}
	}
	for _, src := range sources {
		for _, it := range src.Items {
			if path.Clean(it.Path) == rel {
				return src.Name, it.Key, true
			}
		}
	}
	for _, src := range sources {
		if len(src.Items) == 0 && !strings.Contains(rel, "/") {
			return src.Name, rel, true
		}
	}
	return "", "", false
}
