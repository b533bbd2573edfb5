package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metaWire is the content of secMeta.
type metaWire struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Cluster is false for a snapshot without API objects (Cluster nil):
	// the file then has no object, address or index section.
	Cluster         bool `json:"cluster"`
	PodsListed      bool `json:"podsListed,omitempty"`
	EndpointsListed bool `json:"endpointsListed,omitempty"`
}

// nodesWire is the content of secNodes: the node states with their dumps'
// texts left empty (and their indexes left out), where each text lies in
// secText, and where each index lies in secDumpIdx.
type nodesWire struct {
	Nodes []NodeState `json:"nodes"`
	// Texts[i][j] is {offset, length} of the text of Nodes[i].Dumps[j].
	Texts [][][2]uint64 `json:"texts"`
	// Indexes[i][j] is {offset, length} of the index of Nodes[i].Dumps[j]
	// in secDumpIdx; {0, 0} when it has none. Absent, as is secDumpIdx,
	// when no dump has one (and in files written before indexes were).
	Indexes [][][2]uint64 `json:"indexes,omitempty"`
}

func nodeTypeMeta(o *corev1.Node) *metav1.TypeMeta                { return &o.TypeMeta }
func serviceTypeMeta(o *corev1.Service) *metav1.TypeMeta          { return &o.TypeMeta }
func sliceTypeMeta(o *discoveryv1.EndpointSlice) *metav1.TypeMeta { return &o.TypeMeta }
func podTypeMeta(o *corev1.Pod) *metav1.TypeMeta                  { return &o.TypeMeta }

//lint:ignore SA1019 v1 Endpoints are snapshot content on purpose, see Cluster.Endpoints
func endpointsTypeMeta(o *corev1.Endpoints) *metav1.TypeMeta { return &o.TypeMeta }

// encodeBinary writes s in the binary format (see binary.go).
func encodeBinary(s *Snapshot) ([]byte, error) {
	var w containerWriter
	meta := metaWire{APIVersion: s.APIVersion, Kind: s.Kind, Metadata: s.Metadata, Cluster: s.Cluster != nil}
	if c := s.Cluster; c != nil {
		meta.PodsListed, meta.EndpointsListed = c.PodsListed, c.EndpointsListed
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	w.add(secMeta, b)

	nodes, text, indexes, err := encodeNodes(s.Nodes)
	if err != nil {
		return nil, err
	}
	w.add(secNodes, nodes)
	w.add(secText, text)
	if indexes != nil {
		w.add(secDumpIdx, indexes)
	}

	if s.Cluster != nil {
		if err := encodeCluster(&w, s.Cluster); err != nil {
			return nil, err
		}
	}
	return w.bytes(), nil
}

// encodeNodes returns the content of secNodes, secText and secDumpIdx;
// indexes is nil when no dump has an index (the file then has no
// secDumpIdx).
func encodeNodes(states []NodeState) (nodes, text, indexes []byte, err error) {
	size, indexSize := 0, 0
	for _, n := range states {
		for _, d := range n.Dumps {
			size += len(d.Text)
			indexSize += len(d.Index)
		}
	}
	text = make([]byte, 0, size)
	wire := nodesWire{Nodes: make([]NodeState, len(states)), Texts: make([][][2]uint64, len(states))}
	if indexSize > 0 {
		indexes = make([]byte, 0, indexSize)
		wire.Indexes = make([][][2]uint64, len(states))
	}
	for i, n := range states {
		n.Dumps = append([]Dump(nil), n.Dumps...)
		wire.Texts[i] = make([][2]uint64, len(n.Dumps))
		if indexes != nil {
			wire.Indexes[i] = make([][2]uint64, len(n.Dumps))
		}
		for j := range n.Dumps {
			wire.Texts[i][j] = [2]uint64{uint64(len(text)), uint64(len(n.Dumps[j].Text))}
			text = append(text, n.Dumps[j].Text...)
			n.Dumps[j].Text = ""
			if ix := n.Dumps[j].Index; len(ix) > 0 {
				wire.Indexes[i][j] = [2]uint64{uint64(len(indexes)), uint64(len(ix))}
				indexes = append(indexes, ix...)
			}
			n.Dumps[j].Index = nil
		}
		if states[i].Dumps == nil {
			n.Dumps = nil
		}
		wire.Nodes[i] = n
	}
	if states == nil {
		wire.Nodes = nil
	}
	nodes, err = json.Marshal(wire)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("node states: %w", err)
	}
	return nodes, text, indexes, nil
}

func encodeCluster(w *containerWriter, c *Cluster) error {
	type objects struct {
		id     string
		encode func() ([]byte, error)
	}
	for _, o := range []objects{
		{secNodeObjs, func() ([]byte, error) { return encodeObjects(c.Nodes, nodeTypeMeta, "Nodes") }},
		{secServices, func() ([]byte, error) { return encodeObjects(c.Services, serviceTypeMeta, "Services") }},
		{secSlices, func() ([]byte, error) { return encodeObjects(c.EndpointSlices, sliceTypeMeta, "EndpointSlices") }},
		{secEndpoints, func() ([]byte, error) { return encodeObjects(c.Endpoints, endpointsTypeMeta, "Endpoints") }},
		{secPods, func() ([]byte, error) { return encodeObjects(c.Pods, podTypeMeta, "Pods") }},
	} {
		b, err := o.encode()
		if err != nil {
			return err
		}
		w.add(o.id, b)
	}
	w.add(secAddrs, encodeAddrs(endpointAddrs(c)))

	if len(c.Services) > math.MaxUint32 || len(c.EndpointSlices) > math.MaxUint32 ||
		len(c.Endpoints) > math.MaxUint32 || len(c.Pods) > math.MaxUint32 {
		return errors.New("too many objects for one snapshot")
	}
	var svc, slices, eps, pods []indexEntry
	for i := range c.Services {
		svc = append(svc, indexEntry{key: c.Services[i].Namespace + "/" + c.Services[i].Name, obj: uint32(i)})
	}
	for i := range c.EndpointSlices {
		es := &c.EndpointSlices[i]
		if name, ok := es.Labels[discoveryv1.LabelServiceName]; ok {
			slices = append(slices, indexEntry{key: es.Namespace + "/" + name, obj: uint32(i)})
		}
	}
	for i := range c.Endpoints {
		eps = append(eps, indexEntry{key: c.Endpoints[i].Namespace + "/" + c.Endpoints[i].Name, obj: uint32(i)})
	}
	for i := range c.Pods {
		p := &c.Pods[i]
		pods = append(pods, indexEntry{key: p.Namespace + "/" + p.Name, obj: uint32(i), extra: encodeLabels(p.Labels)})
	}
	for _, x := range []struct {
		id      string
		entries []indexEntry
	}{{secIdxSvc, svc}, {secIdxSlices, slices}, {secIdxEps, eps}, {secIdxPods, pods}} {
		b, err := encodeIndex(x.entries)
		if err != nil {
			return fmt.Errorf("%s: %w", sectionLabel(x.id), err)
		}
		w.add(x.id, b)
	}
	return nil
}
