//go:build ignore

// convert rewrites a `kubectl get ... -o yaml` List: every EndpointSlice is
// replaced by the v1 Endpoints object the Endpoints controller would have
// written for the same Service, so that the capture looks like one from a
// cluster whose objects are Endpoints only (kube-proxy before 1.19, or a
// ticket pasting `kubectl get endpoints`). Other items are kept verbatim.
//
// Usage, from the repository root:
//
//	go run testdata/endpoints/convert.go < testdata/kube-proxy-v1.36.3/two-nodes/objects.yaml > testdata/endpoints/two-nodes-endpoints.yaml
//
// Each slice becomes one subset with the slice's ports: ready endpoints go
// to addresses, terminating ones are left out (the Endpoints controller
// skips pods being deleted), the others go to notReadyAddresses. nodeName
// and targetRef are kept.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

type list struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
	Metadata   map[string]any    `json:"metadata"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	var l list
	if err := yaml.Unmarshal(data, &l); err != nil {
		return fmt.Errorf("reading the List: %w", err)
	}
	var kept []json.RawMessage
	byService := map[string]*corev1.Endpoints{}
	var order []string
	for i, raw := range l.Items {
		var h metav1.TypeMeta
		if err := json.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if h.Kind != "EndpointSlice" {
			kept = append(kept, raw)
			continue
		}
		var es discoveryv1.EndpointSlice
		if err := json.Unmarshal(raw, &es); err != nil {
			return fmt.Errorf("item %d (EndpointSlice): %w", i, err)
		}
		svc := es.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			return fmt.Errorf("item %d: EndpointSlice %s/%s has no %s label", i, es.Namespace, es.Name, discoveryv1.LabelServiceName)
		}
		key := es.Namespace + "/" + svc
		e := byService[key]
		if e == nil {
			e = &corev1.Endpoints{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
				ObjectMeta: metav1.ObjectMeta{Namespace: es.Namespace, Name: svc},
			}
			byService[key] = e
			order = append(order, key)
		}
		e.Subsets = append(e.Subsets, subset(&es))
	}
	for _, key := range order {
		raw, err := json.Marshal(byService[key])
		if err != nil {
			return err
		}
		kept = append(kept, raw)
	}
	l.Items = kept
	outData, err := yaml.Marshal(l)
	if err != nil {
		return err
	}
	_, err = out.Write(outData)
	return err
}

// subset is what the Endpoints controller writes for the endpoints of one
// slice.
func subset(es *discoveryv1.EndpointSlice) corev1.EndpointSubset {
	var ss corev1.EndpointSubset
	for _, p := range es.Ports {
		ep := corev1.EndpointPort{Port: *p.Port}
		if p.Name != nil {
			ep.Name = *p.Name
		}
		if p.Protocol != nil {
			ep.Protocol = *p.Protocol
		}
		ss.Ports = append(ss.Ports, ep)
	}
	for _, e := range es.Endpoints {
		c := e.Conditions
		if c.Terminating != nil && *c.Terminating {
			continue
		}
		a := corev1.EndpointAddress{IP: e.Addresses[0], NodeName: e.NodeName, TargetRef: e.TargetRef}
		if c.Ready == nil || *c.Ready {
			ss.Addresses = append(ss.Addresses, a)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, a)
		}
	}
	return ss
}
