package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podCauses: PodsNotListed, SelectorMatchesNoPods,
// NamedTargetPortUnresolved, PodsOlderThanService.
func podCauses(c *snapshot.Cluster, svc *corev1.Service) []Cause {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	key := svc.Namespace + "/" + svc.Name
	svcRef := objRef("Service", svc.Namespace, svc.Name)
	if !c.PodsListed {
		return []Cause{{
			Severity: SeverityInfo, Code: CodePodsNotListed,
			Message: "pods were not listed (not captured, or forbidden): the pod checks (selector match, named targetPort, service environment variables) were skipped",
			Objects: []string{svcRef},
		}}
	}

	pods, inNamespace := selectedPods(c, svc)
	if len(pods) == 0 {
		return []Cause{{
			Severity: SeverityError, Code: CodeSelectorMatchesNoPods,
			Message: fmt.Sprintf("the selector %s of %s matches none of the %s in namespace %s: no endpoints can be derived from pods",
				selectorString(svc.Spec.Selector), key, wording.Count(inNamespace, "pod", "pods"), svc.Namespace),
			Objects: []string{svcRef},
		}}
	}

	var causes []Cause
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.TargetPort.Type != intstr.String || sp.TargetPort.StrVal == "" {
			continue
		}
		var missing []string
		for _, pod := range pods {
			if !declaresPort(pod, sp.TargetPort.StrVal, protocolOrTCP(&sp.Protocol)) {
				missing = append(missing, objRef("Pod", pod.Namespace, pod.Name))
			}
		}
		if len(missing) == 0 {
			continue
		}
		sev := SeverityWarning
		if len(missing) == len(pods) {
			sev = SeverityError
		}
		causes = append(causes, Cause{
			Severity: sev, Code: CodeNamedTargetPortUnresolved,
			Message: fmt.Sprintf("port %s of %s targets the named port %q (%s), which %d of %s do not declare in any container port: they get no endpoint for this port",
				portLabel(sp), key, sp.TargetPort.StrVal, protocolOrTCP(&sp.Protocol), len(missing), wording.Count(len(pods), "selected pod", "selected pods")),
			Objects: missing,
		})
	}

	if older := olderPods(pods, svc); len(older) > 0 {
		causes = append(causes, Cause{
			Severity: SeverityInfo, Code: CodePodsOlderThanService,
			Message: fmt.Sprintf("%s created before %s: kubelet sets service environment variables only when a container starts, so they lack %s",
				olderPodsWere(len(older)), key, strings.Join(serviceEnvNames(svc), ", ")),
			Objects: older,
		})
	}
	return causes
}

// selectedPods are the pods of the namespace the selector matches, sorted
// by name, and how many pods the namespace has.
func selectedPods(c *snapshot.Cluster, svc *corev1.Service) ([]*corev1.Pod, int) {
	var out []*corev1.Pod
	n := 0
	for i := range c.Pods {
		pod := &c.Pods[i]
		if pod.Namespace != svc.Namespace {
			continue
		}
		n++
		if selectorMatches(svc.Spec.Selector, pod.Labels) {
			out = append(out, pod)
		}
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	if c.Partial != nil {
		// A partial snapshot holds only the Pods the Service selects or
		// its endpoints name; it counts the namespace's.
		n = c.Partial.NamespacePods[svc.Namespace]
	}
	return out, n
}

func selectorMatches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func selectorString(selector map[string]string) string {
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + selector[k]
	}
	return strings.Join(parts, ",")
}

// declaresPort: a container (or a sidecar init container) of the pod
// declares a port with that name and protocol, as the EndpointSlice
// controller's FindPort requires.
func declaresPort(pod *corev1.Pod, name, protocol string) bool {
	containers := slices.Clone(pod.Spec.Containers)
	for _, ic := range pod.Spec.InitContainers {
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, ic)
		}
	}
	for _, ctr := range containers {
		for _, p := range ctr.Ports {
			if p.Name == name && protocolOrTCP(&p.Protocol) == protocol {
				return true
			}
		}
	}
	return false
}

func portLabel(sp *corev1.ServicePort) string {
	if sp.Name != "" {
		return fmt.Sprintf("%q (%d)", sp.Name, sp.Port)
	}
	return fmt.Sprintf("%d", sp.Port)
}

// olderPods are the pods created strictly before the service, among those
// that get service links (enableServiceLinks not false).
func olderPods(pods []*corev1.Pod, svc *corev1.Service) []string {
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return nil // kubelet makes no variables for it
	}
	if svc.CreationTimestamp.IsZero() {
		return nil
	}
	var out []string
	for _, pod := range pods {
		if pod.Spec.EnableServiceLinks != nil && !*pod.Spec.EnableServiceLinks {
			continue
		}
		if !pod.CreationTimestamp.IsZero() && pod.CreationTimestamp.Before(&svc.CreationTimestamp) {
			out = append(out, objRef("Pod", pod.Namespace, pod.Name))
		}
	}
	return out
}

// serviceEnvNames are the variables kubelet derives from a service:
// <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT and <NAME>_SERVICE_PORT_<PORT>
// per named port, names upper-cased with '-' turned into '_'.
func serviceEnvNames(svc *corev1.Service) []string {
	base := envName(svc.Name)
	names := []string{base + "_SERVICE_HOST", base + "_SERVICE_PORT"}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			names = append(names, base+"_SERVICE_PORT_"+envName(p.Name))
		}
	}
	return names
}

func envName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// olderPodsWere starts the sentence on pods created before their Service.
func olderPodsWere(n int) string {
	if n == 1 {
		return "1 selected pod was"
	}
	return wording.Count(n, "selected pod", "selected pods") + " were"
}
