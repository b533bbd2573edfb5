package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/svctrace/svctrace/snapshot"
)

// objectHeader is what is read of a document before decoding it typed.
type objectHeader struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// wantAPIVersion is the apiVersion accepted for a kind svctrace reads;
// known is false for other kinds.
func wantAPIVersion(kind string) (version string, known bool) {
	switch kind {
	case "Node", "Service", "Pod", "Endpoints":
		return "v1", true
	case "EndpointSlice":
		return discoveryv1.SchemeGroupVersion.String(), true
	}
	return "", false
}

// decoder accumulates the objects of one DecodeObjects call.
type decoder struct {
	c       snapshot.Cluster
	ignored map[string]int
	order   []string
	// first says where each object ("Service ns/name") was read, to
	// refuse a second of the same name.
	first map[string]string
}

// DecodeObjects reads Node, Service, EndpointSlice, Endpoints and Pod
// objects from a v1 List (as `kubectl get -o yaml` prints), typed lists
// (PodList, ...), or a multi-document YAML (or JSON) stream of objects,
// split and converted to JSON as kubectl reads the files of -f (so by
// sigs.k8s.io/yaml). Other kinds are ignored and reported in the returned
// notes. PodsListed is set when a Pod or a PodList was present,
// EndpointsListed likewise for Endpoints. Errors name the document
// (1-based, counting the documents that hold something; a YAML syntax
// error's line is counted from the start of its document) and, for lists,
// the item (0-based), with the object's kind.
func DecodeObjects(data []byte) (*snapshot.Cluster, []string, error) {
	d := &decoder{ignored: map[string]int{}, first: map[string]string{}}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; {
		var js json.RawMessage
		err := dec.Decode(&js)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, fmt.Errorf("document %d: cut short: %w", doc, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(js) == 0 || bytes.Equal(js, []byte("null")) {
			continue // a document of comments or nothing
		}
		if err := d.object(js, fmt.Sprintf("document %d", doc), "", 0); err != nil {
			return nil, nil, err
		}
		doc++
	}
	notes := make([]string, 0, len(d.order))
	for _, what := range d.order {
		notes = append(notes, fmt.Sprintf("ignored %d %s object(s)", d.ignored[what], what))
	}
	return &d.c, notes, nil
}

// object decodes one object or list; defaultKind applies to list items
// without a kind (items of a typed list such as PodList).
func (d *decoder) object(js []byte, where, defaultKind string, depth int) error {
	var h objectHeader
	if err := json.Unmarshal(js, &h); err != nil {
		return fmt.Errorf("%s: not a Kubernetes object: %w", where, err)
	}
	kind := h.Kind
	if kind == "" {
		kind = defaultKind
	}
	if kind == "" {
		return fmt.Errorf("%s: object has no kind", where)
	}
	if strings.HasSuffix(kind, "List") && depth == 0 {
		switch kind {
		case "PodList":
			d.c.PodsListed = true
		case "EndpointsList":
			d.c.EndpointsListed = true
		}
		itemKind := strings.TrimSuffix(kind, "List")
		for i, item := range h.Items {
			if err := d.object(item, fmt.Sprintf("%s item %d", where, i), itemKind, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	want, known := wantAPIVersion(kind)
	if !known {
		d.ignore(kind)
		return nil
	}
	if h.APIVersion != "" && h.APIVersion != want {
		d.ignore(kind + " of apiVersion " + h.APIVersion)
		return nil
	}
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	if err := d.typed(js, kind); err != nil {
		return fmt.Errorf("%s (%s %s): %w", where, kind, name, err)
	}
	if h.Metadata.Name == "" {
		return nil
	}
	key := kind + " " + name
	if first, dup := d.first[key]; dup {
		return fmt.Errorf("%s: a second %s %s, the first being %s: the API holds each object once (were two lists that overlap given together?)", where, kind, name, first)
	}
	d.first[key] = where
	return nil
}

// typed decodes a known kind into the cluster.
func (d *decoder) typed(js []byte, kind string) error {
	switch kind {
	case "Node":
		var o corev1.Node
		if err := json.Unmarshal(js, &o); err != nil {
			return err
		}
		d.c.Nodes = append(d.c.Nodes, o)
	case "Service":
		var o corev1.Service
		if err := json.Unmarshal(js, &o); err != nil {
			return err
		}
		d.c.Services = append(d.c.Services, o)
	case "EndpointSlice":
		var o discoveryv1.EndpointSlice
		if err := json.Unmarshal(js, &o); err != nil {
			return err
		}
		d.c.EndpointSlices = append(d.c.EndpointSlices, o)
	case "Endpoints":
		//lint:ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices
		var o corev1.Endpoints
		if err := json.Unmarshal(js, &o); err != nil {
			return err
		}
		if err := checkEndpointsAddresses(&o); err != nil {
			return err
		}
		d.c.Endpoints = append(d.c.Endpoints, o)
		d.c.EndpointsListed = true
	case "Pod":
		var o corev1.Pod
		if err := json.Unmarshal(js, &o); err != nil {
			return err
		}
		d.c.Pods = append(d.c.Pods, o)
		d.c.PodsListed = true
	default:
		return fmt.Errorf("unsupported kind %s", kind)
	}
	return nil
}

// ignore counts an ignored kind, keeping first-seen order for the notes.
func (d *decoder) ignore(what string) {
	if d.ignored[what] == 0 {
		d.order = append(d.order, what)
	}
	d.ignored[what]++
}

// checkEndpointsAddresses refuses an Endpoints object with an address that
// is not an IP: its family, and so the proxier that would use it, is
// unknown. The error names the field.
//
//lint:ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices
func checkEndpointsAddresses(e *corev1.Endpoints) error {
	for i, ss := range e.Subsets {
		for _, f := range []struct {
			name  string
			addrs []corev1.EndpointAddress
		}{{"addresses", ss.Addresses}, {"notReadyAddresses", ss.NotReadyAddresses}} {
			for j, a := range f.addrs {
				if _, _, ok := normalizeIP(a.IP); !ok {
					return fmt.Errorf("subsets[%d].%s[%d].ip %q is not an IP address", i, f.name, j, a.IP)
				}
			}
		}
	}
	return nil
}
