//lint:file-ignore SA1019 v1 Endpoints are snapshot content on purpose, see Cluster.Endpoints.
package snapshot

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodeBinary reads a whole binary snapshot.
func decodeBinary(src source) (*Snapshot, error) {
	c, err := openContainer(src)
	if err != nil {
		return nil, err
	}
	s, meta, err := decodeHead(c)
	if err != nil {
		return nil, err
	}
	if !meta.Cluster {
		return s, nil
	}
	cl := &Cluster{PodsListed: meta.PodsListed, EndpointsListed: meta.EndpointsListed}
	if cl.Nodes, err = readObjects[corev1.Node](c, secNodeObjs, nodeTypeMeta); err != nil {
		return nil, err
	}
	if cl.Services, err = readObjects[corev1.Service](c, secServices, serviceTypeMeta); err != nil {
		return nil, err
	}
	if cl.EndpointSlices, err = readObjects[discoveryv1.EndpointSlice](c, secSlices, sliceTypeMeta); err != nil {
		return nil, err
	}
	if cl.Endpoints, err = readObjects[corev1.Endpoints](c, secEndpoints, endpointsTypeMeta); err != nil {
		return nil, err
	}
	if cl.Pods, err = readObjects[corev1.Pod](c, secPods, podTypeMeta); err != nil {
		return nil, err
	}
	// The address and index sections serve partial loads; a whole load
	// still checks them, so that a damaged file is found by either.
	for _, id := range []string{secAddrs, secIdxSvc, secIdxSlices, secIdxEps, secIdxPods} {
		if _, err := c.read(id, false); err != nil {
			return nil, err
		}
	}
	if err := checkObjects(cl); err != nil {
		return nil, err
	}
	s.Cluster = cl
	return s, nil
}

func readObjects[T any, P protoObject[T]](c *container, id string, tm func(*T) *metav1.TypeMeta) ([]T, error) {
	b, err := c.read(id, false)
	if err != nil {
		return nil, err
	}
	return decodeObjects[T, P](id, b, tm)
}

// decodeHead reads what every load reads: the metadata and the node
// states with their dumps.
func decodeHead(c *container) (*Snapshot, metaWire, error) {
	var meta metaWire
	b, err := c.read(secMeta, false)
	if err != nil {
		return nil, meta, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, meta, fmt.Errorf("damaged file: %s: %v", sectionLabel(secMeta), cleanDecodeMessage(err))
	}
	if meta.Kind != Kind {
		return nil, meta, fmt.Errorf("kind is %q, want %q", meta.Kind, Kind)
	}
	if meta.APIVersion != APIVersion {
		return nil, meta, fmt.Errorf("apiVersion %q is not supported by this svctrace (it reads %s)", meta.APIVersion, APIVersion)
	}
	s := &Snapshot{APIVersion: meta.APIVersion, Kind: meta.Kind, Metadata: meta.Metadata}

	if b, err = c.read(secNodes, false); err != nil {
		return nil, meta, err
	}
	var nodes nodesWire
	if err := json.Unmarshal(b, &nodes); err != nil {
		return nil, meta, fmt.Errorf("damaged file: %s: %v", sectionLabel(secNodes), cleanDecodeMessage(err))
	}
	text, err := c.read(secText, false)
	if err != nil {
		return nil, meta, err
	}
	if len(nodes.Texts) != len(nodes.Nodes) {
		return nil, meta, fmt.Errorf("damaged file: %s: %d nodes but texts for %d", sectionLabel(secNodes), len(nodes.Nodes), len(nodes.Texts))
	}
	for i := range nodes.Nodes {
		n := &nodes.Nodes[i]
		if len(nodes.Texts[i]) != len(n.Dumps) {
			return nil, meta, fmt.Errorf("damaged file: %s: node %d (%s) has %d dumps but texts for %d", sectionLabel(secNodes), i, n.Name, len(n.Dumps), len(nodes.Texts[i]))
		}
		for j, span := range nodes.Texts[i] {
			off, l := span[0], span[1]
			if off > uint64(len(text)) || l > uint64(len(text))-off {
				return nil, meta, fmt.Errorf("damaged file: %s: the text of node %d (%s) dump %d spans bytes %d to %d of a section of %d bytes",
					sectionLabel(secNodes), i, n.Name, j, off, off+l, len(text))
			}
			n.Dumps[j].Text = c.src.text(text[off : off+l])
		}
	}
	if err := setIndexes(c, &nodes); err != nil {
		return nil, meta, err
	}
	s.Nodes = nodes.Nodes
	if err := checkNodes(s); err != nil {
		return nil, meta, err
	}
	return s, meta, nil
}

// setIndexes sets the Index of each dump of nodes from secDumpIdx, where
// nodes.Indexes says each lies: a sub-slice of the section, nil for a
// span of length 0. The section is read (and checked) whenever the file
// has it; a file without Indexes (written before indexes were, or with no
// dump indexed) leaves every Index nil.
func setIndexes(c *container, nodes *nodesWire) error {
	idx, err := c.read(secDumpIdx, true)
	if err != nil {
		return err
	}
	if nodes.Indexes == nil {
		return nil
	}
	_, present := c.sections[secDumpIdx]
	if len(nodes.Indexes) != len(nodes.Nodes) {
		return fmt.Errorf("damaged file: %s: %d nodes but indexes for %d", sectionLabel(secNodes), len(nodes.Nodes), len(nodes.Indexes))
	}
	idx = c.src.own(idx)
	for i := range nodes.Nodes {
		n := &nodes.Nodes[i]
		if len(nodes.Indexes[i]) != len(n.Dumps) {
			return fmt.Errorf("damaged file: %s: node %d (%s) has %d dumps but indexes for %d", sectionLabel(secNodes), i, n.Name, len(n.Dumps), len(nodes.Indexes[i]))
		}
		for j, span := range nodes.Indexes[i] {
			off, l := span[0], span[1]
			if off > uint64(len(idx)) || l > uint64(len(idx))-off {
				where := fmt.Sprintf("%s of %d bytes", sectionLabel(secDumpIdx), len(idx))
				if !present {
					where = sectionLabel(secDumpIdx) + ", which is missing"
				}
				return fmt.Errorf("damaged file: %s: the index of node %d (%s) dump %d spans bytes %d to %d of %s",
					sectionLabel(secNodes), i, n.Name, j, off, off+l, where)
			}
			if l > 0 {
				n.Dumps[j].Index = idx[off : off+l : off+l]
			}
		}
	}
	return nil
}
