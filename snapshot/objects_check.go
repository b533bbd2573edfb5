package snapshot

import (
	"fmt"
	"iter"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkObjects refuses a cluster that holds an object twice (one kind,
// namespace and name): the API has each once, and a second copy would be
// read as a Service or slice of its own, with its rules twice.
func checkObjects(c *Cluster) error {
	if c == nil {
		return nil
	}
	for _, list := range []struct {
		kind, field string
		metas       iter.Seq[*metav1.ObjectMeta]
	}{
		{"Node", "nodes", metasOf(c.Nodes, func(o *corev1.Node) *metav1.ObjectMeta { return &o.ObjectMeta })},
		{"Service", "services", metasOf(c.Services, func(o *corev1.Service) *metav1.ObjectMeta { return &o.ObjectMeta })},
		{"EndpointSlice", "endpointSlices", metasOf(c.EndpointSlices, func(o *discoveryv1.EndpointSlice) *metav1.ObjectMeta { return &o.ObjectMeta })},
		//lint:ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices
		{"Endpoints", "endpoints", metasOf(c.Endpoints, func(o *corev1.Endpoints) *metav1.ObjectMeta { return &o.ObjectMeta })},
		{"Pod", "pods", metasOf(c.Pods, func(o *corev1.Pod) *metav1.ObjectMeta { return &o.ObjectMeta })},
	} {
		first := map[[2]string]int{}
		i := 0
		for m := range list.metas {
			if m.Name != "" {
				k := [2]string{m.Namespace, m.Name}
				if j, dup := first[k]; dup {
					return fmt.Errorf("damaged snapshot: cluster.%s[%d] is a second %s %s (the first is %s[%d]): the API holds each object once",
						list.field, i, list.kind, objName(m), list.field, j)
				}
				first[k] = i
			}
			i++
		}
	}
	return nil
}

// metasOf walks the metadata of a list's objects.
func metasOf[T any](list []T, meta func(*T) *metav1.ObjectMeta) iter.Seq[*metav1.ObjectMeta] {
	return func(yield func(*metav1.ObjectMeta) bool) {
		for i := range list {
			if !yield(meta(&list[i])) {
				return
			}
		}
	}
}

func objName(m *metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}
