package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/snapshot"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// objectKind says where objects of a kind live in snapshot.Cluster (its
// JSON field) and gives an empty typed object to check them against.
func objectKind(kind string) (field string, typed func() any, namespaced bool, ok bool) {
	switch kind {
	case "Service":
		return "services", func() any { return &corev1.Service{} }, true, true
	case "EndpointSlice":
		return "endpointSlices", func() any { return &discoveryv1.EndpointSlice{} }, true, true
	case "Pod":
		return "pods", func() any { return &corev1.Pod{} }, true, true
	case "Node":
		return "nodes", func() any { return &corev1.Node{} }, false, true
	case "Endpoints":
		//lint:ignore SA1019 v1 Endpoints are part of the captures, as in snapshot.Cluster
		return "endpoints", func() any { return &corev1.Endpoints{} }, true, true
	}
	return "", nil, false, false
}

// objectsEdit applies an objects.patch section to the cluster's objects.
type objectsEdit struct {
	file    string
	first   int            // line of the section's first line in file
	objects map[string]any // the cluster as JSON values
}

// editObjects applies the objects.patch section data (first line at line
// first of file) to c and returns the edited cluster.
func editObjects(c *snapshot.Cluster, file string, first int, data string) (*snapshot.Cluster, error) {
	if c == nil {
		return nil, fmt.Errorf("%s:%d: objects.patch: the capture has no API objects", file, first)
	}
	js, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	e := &objectsEdit{file: file, first: first}
	if err := json.Unmarshal(js, &e.objects); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		return nil, fmt.Errorf("%s:%d: objects.patch: %w", file, first, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: objects.patch: want a mapping of add, replace, patch and delete lists", file, first)
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, list := top.Content[i], top.Content[i+1]
		if list.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s: %s: want a list", e.pos(key), key.Value)
		}
		for _, item := range list.Content {
			var err error
			switch key.Value {
			case "add", "replace":
				err = e.put(item, key.Value == "add")
			case "patch":
				err = e.patch(item)
			case "delete":
				err = e.delete(item)
			default:
				return nil, fmt.Errorf("%s: unknown list %q: want add, replace, patch or delete", e.pos(key), key.Value)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	out, err := json.Marshal(e.objects)
	if err != nil {
		return nil, err
	}
	var edited snapshot.Cluster
	if err := strictJSON(out, &edited); err != nil {
		return nil, fmt.Errorf("%s:%d: objects.patch: %w", file, first, err)
	}
	return &edited, nil
}

func (e *objectsEdit) pos(n *yaml.Node) string {
	return fmt.Sprintf("%s:%d", e.file, e.first+n.Line-1)
}

// find returns the list of objects of a kind and the index of the named
// one in it (-1 when absent).
func (e *objectsEdit) find(n *yaml.Node, kind, ns, name string) (field string, list []any, at int, err error) {
	field, _, namespaced, ok := objectKind(kind)
	if !ok {
		return "", nil, -1, fmt.Errorf("%s: kind %q: want Service, EndpointSlice, Pod, Node or Endpoints", e.pos(n), kind)
	}
	if namespaced != (ns != "") {
		return "", nil, -1, fmt.Errorf("%s: %s %s: a %s is named NAMESPACE/NAME when namespaced, NAME when not", e.pos(n), kind, name, kind)
	}
	list, _ = e.objects[field].([]any)
	for i, o := range list {
		m, _ := o.(map[string]any)["metadata"].(map[string]any)
		if m["name"] == name && (m["namespace"] == ns || (ns == "" && m["namespace"] == nil)) {
			return field, list, i, nil
		}
	}
	return field, list, -1, nil
}

// put adds an object (add) or replaces the object of the same kind,
// namespace and name (replace).
func (e *objectsEdit) put(n *yaml.Node, add bool) error {
	obj, err := e.value(n)
	if err != nil {
		return err
	}
	m, _ := obj.(map[string]any)
	kind, _ := m["kind"].(string)
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if kind == "" || name == "" {
		return fmt.Errorf("%s: an object needs kind and metadata.name", e.pos(n))
	}
	field, list, at, err := e.find(n, kind, ns, name)
	if err != nil {
		return err
	}
	if err := e.check(n, kind, m); err != nil {
		return err
	}
	id := strings.TrimPrefix(ns+"/"+name, "/")
	switch {
	case add && at >= 0:
		return fmt.Errorf("%s: add %s %s: it exists already (use replace or patch)", e.pos(n), kind, id)
	case add:
		e.objects[field] = append(list, m)
	case at < 0:
		return fmt.Errorf("%s: replace %s %s: no such object in the capture", e.pos(n), kind, id)
	default:
		if err := e.changes(n, kind, list[at], m); err != nil {
			return err
		}
		list[at] = m
	}
	return nil
}

// patch applies a JSON merge patch (RFC 7386) to one object.
func (e *objectsEdit) patch(n *yaml.Node) error {
	v, err := e.value(n)
	if err != nil {
		return err
	}
	p, _ := v.(map[string]any)
	ref, _ := p["object"].(string)
	merge, ok := p["merge"].(map[string]any)
	if ref == "" || !ok || len(p) != 2 {
		return fmt.Errorf("%s: a patch is {object: KIND NAMESPACE/NAME, merge: {...}}", e.pos(n))
	}
	kind, ns, name, err := e.ref(n, ref)
	if err != nil {
		return err
	}
	_, list, at, err := e.find(n, kind, ns, name)
	if err != nil {
		return err
	}
	if at < 0 {
		return fmt.Errorf("%s: patch %s: no such object in the capture", e.pos(n), ref)
	}
	patched := mergePatch(list[at], merge)
	if err := e.check(n, kind, patched); err != nil {
		return err
	}
	if err := e.changes(n, kind, list[at], patched); err != nil {
		return err
	}
	list[at] = patched
	return nil
}

func (e *objectsEdit) delete(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s: a delete is KIND NAMESPACE/NAME (or KIND NAME for a Node)", e.pos(n))
	}
	kind, ns, name, err := e.ref(n, n.Value)
	if err != nil {
		return err
	}
	field, list, at, err := e.find(n, kind, ns, name)
	if err != nil {
		return err
	}
	if at < 0 {
		return fmt.Errorf("%s: delete %s: no such object in the capture", e.pos(n), n.Value)
	}
	e.objects[field] = append(list[:at:at], list[at+1:]...)
	return nil
}

// ref reads "KIND NAMESPACE/NAME" (or "KIND NAME" for a Node).
func (e *objectsEdit) ref(n *yaml.Node, s string) (kind, ns, name string, err error) {
	kind, id, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || id == "" {
		return "", "", "", fmt.Errorf("%s: %q: want KIND NAMESPACE/NAME (or KIND NAME for a Node)", e.pos(n), s)
	}
	if ns, name, ok = strings.Cut(id, "/"); !ok {
		ns, name = "", id
	}
	return kind, ns, name, nil
}

func (e *objectsEdit) value(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", e.pos(n), err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.pos(n), err)
	}
	var out any
	if err := json.Unmarshal(js, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", e.pos(n), err)
	}
	return out, nil
}

// check decodes an object into its Go type, refusing unknown fields, so
// that a misspelt field is an error rather than an edit that does nothing.
func (e *objectsEdit) check(n *yaml.Node, kind string, obj any) error {
	_, typed, _, _ := objectKind(kind)
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := strictJSON(js, typed()); err != nil {
		return fmt.Errorf("%s: %s: %w", e.pos(n), kind, err)
	}
	return nil
}

// changes refuses an edit that leaves the object as it was.
func (e *objectsEdit) changes(n *yaml.Node, kind string, before, after any) error {
	_, typed, _, _ := objectKind(kind)
	var enc [2][]byte
	for i, o := range []any{before, after} {
		js, err := json.Marshal(o)
		if err != nil {
			return err
		}
		t := typed()
		if err := json.Unmarshal(js, t); err != nil {
			return err
		}
		if enc[i], err = json.Marshal(t); err != nil {
			return err
		}
	}
	if bytes.Equal(enc[0], enc[1]) {
		return fmt.Errorf("%s: the edit of this %s changes nothing", e.pos(n), kind)
	}
	return nil
}

// mergePatch applies patch to target as RFC 7386 says: objects merge key
// by key, null removes a key, anything else replaces.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	out := map[string]any{}
	if t, ok := target.(map[string]any); ok {
		for k, v := range t {
			out[k] = v
		}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = mergePatch(out[k], v)
		}
	}
	return out
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
