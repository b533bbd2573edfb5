package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// agentObjects decodes agent.yaml strictly, object by object.
func agentObjects(t *testing.T) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile("agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for i, doc := range strings.Split(string(b), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("agent.yaml, object %d: %v", i+1, err)
		}
		out = append(out, obj)
	}
	return out
}

// TestAgentManifest: the agent's least privilege, as the issue sets it:
// host network, NET_ADMIN and NET_RAW only, a read-only root, read-only
// access to what kube-proxy reads, probes on its health endpoints.
func TestAgentManifest(t *testing.T) {
	var ds *appsv1.DaemonSet
	kinds := map[string]int{}
	for _, obj := range agentObjects(t) {
		kinds[obj.GetObjectKind().GroupVersionKind().Kind]++
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *rbacv1.ClusterRole:
			for _, r := range o.Rules {
				for _, v := range r.Verbs {
					if !slices.Contains([]string{"get", "list", "watch"}, v) {
						t.Errorf("ClusterRole %s may %s %v", o.Name, v, r.Resources)
					}
				}
				for _, res := range r.Resources {
					if !slices.Contains([]string{"services", "nodes", "endpointslices"}, res) {
						t.Errorf("ClusterRole %s reads %s, which kube-proxy does not", o.Name, res)
					}
				}
			}
		case *rbacv1.Role:
			for _, r := range o.Rules {
				// kube-proxy's settings, to cross-check its /configz: the
				// ConfigMaps kubeadm and EKS write, and its Pod's flags.
				config := o.Namespace == "kube-system" && slices.Equal(r.Verbs, []string{"get"}) &&
					slices.Equal(r.ResourceNames, []string{"kube-proxy", "kube-proxy-config"}) && slices.Equal(r.Resources, []string{"configmaps"})
				proxyPod := o.Namespace == "kube-system" && slices.Equal(r.Verbs, []string{"list"}) && slices.Equal(r.Resources, []string{"pods"})
				// Its DaemonSet, when kube-proxy does not answer: should
				// it run here, and at which version.
				daemonSet := o.Namespace == "kube-system" && slices.Equal(r.Verbs, []string{"list"}) &&
					slices.Equal(r.APIGroups, []string{"apps"}) && slices.Equal(r.Resources, []string{"daemonsets"})
				// Its own Pod's annotation: the API certificate's fingerprint.
				publish := o.Namespace == "svctrace" && slices.Equal(r.Verbs, []string{"get", "patch"}) && slices.Equal(r.Resources, []string{"pods"})
				if !config && !proxyPod && !daemonSet && !publish {
					t.Errorf("Role %s/%s: %+v, want get of kube-proxy's ConfigMaps or list of Pods or DaemonSets in kube-system, or get and patch of Pods in svctrace", o.Namespace, o.Name, r)
				}
			}
		case *rbacv1.ClusterRoleBinding:
			if o.RoleRef.Name != "svctrace-agent" && o.RoleRef.Name != "system:auth-delegator" {
				t.Errorf("ClusterRoleBinding %s binds %s", o.Name, o.RoleRef.Name)
			}
		case *rbacv1.RoleBinding:
			if !slices.Contains([]string{"svctrace-agent-kube-proxy-config", "svctrace-agent-publish", "extension-apiserver-authentication-reader"}, o.RoleRef.Name) {
				t.Errorf("RoleBinding %s/%s binds %s", o.Namespace, o.Name, o.RoleRef.Name)
			}
		}
	}
	want := map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 2, "Role": 2, "RoleBinding": 3, "DaemonSet": 1, "Service": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects, want %d", kinds[k], k, n)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || len(spec.Containers) != 1 {
		t.Fatalf("hostNetwork %v, %d containers", spec.HostNetwork, len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("security context %+v", sc)
	}
	if sc != nil && sc.Capabilities != nil {
		if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) {
			t.Errorf("capabilities %+v, want all dropped but NET_ADMIN and NET_RAW", sc.Capabilities)
		}
	} else {
		t.Error("no capabilities dropped")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/livez" {
		t.Error("probes are not /readyz and /livez")
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Error("NODE_NAME is not the Pod's node")
	}
	for env, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == env && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == path
		}) {
			t.Errorf("%s is not the Pod's %s: the agent publishes its API certificate there", env, path)
		}
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/run/xtables.lock" }) {
		t.Error("/run/xtables.lock is not mounted: a repair on the legacy backend cannot take iptables' lock")
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v: the agent must run on every node", spec.Tolerations)
	}
}
