//lint:file-ignore SA1019 v1 Endpoints are snapshot content on purpose, see Cluster.Endpoints.
package snapshot

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Partial describes a snapshot loaded for some Services only
// (LoadPartial). Such a snapshot holds, of the file:
//
//   - the metadata, every node state with all its dumps, and the
//     PodsListed and EndpointsListed flags, as a whole load does;
//   - every Node object;
//   - the Services named in Services that the file holds;
//   - their EndpointSlices: those of the Service's namespace whose
//     kubernetes.io/service-name label is the Service's name;
//   - their v1 Endpoints objects (the Service's namespace and name);
//   - the Pods those EndpointSlices' endpoints and those Endpoints objects'
//     addresses (ready or not) reference by a targetRef of kind Pod (its
//     namespace, or the object's when it has none), and the Pods of each
//     loaded Service's namespace that its selector matches;
//
// each kind in the order of the file. Nothing else: Cluster.Services,
// EndpointSlices, Endpoints and Pods are not the cluster's; what the
// analysis needs to know of the rest is in the fields of Partial.
type Partial struct {
	// Services is the filter the snapshot was loaded with, as given,
	// including names the file does not hold (see HasService).
	Services []types.NamespacedName
	// ServiceNames is every Service of the file as "namespace/name",
	// sorted, each once: for the close matches of a mistyped name.
	ServiceNames []string
	// Total counts the objects of each kind in the whole file: a count
	// above zero says the cluster has some (for instance, whether it has
	// any EndpointSlice at all, or any v1 Endpoints object).
	Total Counts
	// EndpointAddrs are the addresses endpoints stand at in the whole
	// file, sorted (netip.Addr.Compare), each once: the first address of
	// every endpoint of every EndpointSlice, and every address and
	// not-ready address of every v1 Endpoints object. Texts that are not
	// IP addresses (an FQDN slice's) are left out.
	EndpointAddrs []netip.Addr
	// NamespacePods counts the Pods of the file in the namespace of each
	// Service of the filter (what "matches none of the N pods in
	// namespace X" counts; the snapshot holds only the selected ones).
	NamespacePods map[string]int
}

// Counts are numbers of objects by kind.
type Counts struct {
	Nodes, Services, EndpointSlices, Endpoints, Pods int
}

// HasService reports whether the whole file holds the Service.
func (p *Partial) HasService(namespace, name string) bool {
	_, ok := slices.BinarySearch(p.ServiceNames, namespace+"/"+name)
	return ok
}

// IsEndpointAddr reports whether a is in EndpointAddrs.
func (p *Partial) IsEndpointAddr(a netip.Addr) bool {
	_, ok := slices.BinarySearchFunc(p.EndpointAddrs, a, netip.Addr.Compare)
	return ok
}

// LoadPartial reads from a binary snapshot the part that questions about
// the given Services need (see Partial), decoding nothing else; a name the
// file does not hold is no error, and with no names it reads the node
// states, the Nodes and the facts of Partial only. The Snapshot's Cluster.Partial says what
// was loaded. A YAML or JSON file is loaded whole (Load), with
// Cluster.Partial nil, and so is a snapshot without API objects.
func LoadPartial(path string, services []types.NamespacedName) (*Snapshot, error) {
	if services == nil {
		services = []types.NamespacedName{}
	}
	s, ok, err := loadBinary(path, services)
	if ok || err != nil {
		return s, err
	}
	return Load(path)
}

// loadBinary loads path, whole when services is nil, else in part, when
// it is a binary snapshot; ok is false when it is not (it is then left
// unread past its first bytes).
func loadBinary(path string, services []types.NamespacedName) (s *Snapshot, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("reading snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading snapshot: %w", err)
	}
	magic := make([]byte, len(binaryMagic))
	if _, err := f.ReadAt(magic, 0); err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("reading snapshot %s: %w", path, err)
	}
	if !IsBinary(magic) {
		return nil, false, nil
	}
	var src source = fileSource{r: f, n: uint64(st.Size())}
	if m, ok := mapFile(f, st.Size()); ok {
		src = m
	}
	if services == nil {
		s, err = decodeBinary(src)
	} else {
		s, err = decodePartial(src, services)
	}
	if err != nil {
		return nil, true, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return s, true, nil
}

func decodePartial(src source, services []types.NamespacedName) (*Snapshot, error) {
	c, err := openContainer(src)
	if err != nil {
		return nil, err
	}
	s, meta, err := decodeHead(c)
	if err != nil || !meta.Cluster {
		return s, err
	}
	cl := &Cluster{PodsListed: meta.PodsListed, EndpointsListed: meta.EndpointsListed}
	if cl.Nodes, err = readObjects[corev1.Node](c, secNodeObjs, nodeTypeMeta); err != nil {
		return nil, err
	}
	p := &Partial{Services: slices.Clone(services), NamespacePods: map[string]int{}}
	cl.Partial = p
	p.Total.Nodes = len(cl.Nodes)

	var x partialIndexes
	if err := x.open(c, &p.Total); err != nil {
		return nil, err
	}
	b, err := c.read(secAddrs, false)
	if err != nil {
		return nil, err
	}
	if p.EndpointAddrs, err = decodeAddrs(b); err != nil {
		return nil, err
	}
	p.ServiceNames = x.svc.keys()

	svcs, sls, eps := picks{}, picks{}, picks{}
	for _, nn := range services {
		key := nn.Namespace + "/" + nn.Name
		svcs.addRange(x.svc, key)
		sls.addRange(x.slices, key)
		eps.addRange(x.eps, key)
		lo, hi := x.pods.prefixRange(nn.Namespace + "/")
		p.NamespacePods[nn.Namespace] = hi - lo
	}
	if cl.Services, err = decodeSome[corev1.Service](x.svcR, svcs.sorted(), serviceTypeMeta, svcs.name); err != nil {
		return nil, err
	}
	if cl.EndpointSlices, err = decodeSome[discoveryv1.EndpointSlice](x.slicesR, sls.sorted(), sliceTypeMeta, sls.name); err != nil {
		return nil, err
	}
	if cl.Endpoints, err = decodeSome[corev1.Endpoints](x.epsR, eps.sorted(), endpointsTypeMeta, eps.name); err != nil {
		return nil, err
	}
	pods, err := podsFor(cl, x.pods)
	if err != nil {
		return nil, err
	}
	if cl.Pods, err = decodeSome[corev1.Pod](x.podsR, pods.sorted(), podTypeMeta, pods.name); err != nil {
		return nil, err
	}
	s.Cluster = cl
	return s, nil
}

// partialIndexes are the object readers and indexes a partial load uses.
type partialIndexes struct {
	svcR, slicesR, epsR, podsR *objectReader
	svc, slices, eps, pods     *index
}

func (x *partialIndexes) open(c *container, total *Counts) error {
	for _, o := range []struct {
		objs, idx string
		r         **objectReader
		x         **index
		n         *int
	}{
		{secServices, secIdxSvc, &x.svcR, &x.svc, &total.Services},
		{secSlices, secIdxSlices, &x.slicesR, &x.slices, &total.EndpointSlices},
		{secEndpoints, secIdxEps, &x.epsR, &x.eps, &total.Endpoints},
		{secPods, secIdxPods, &x.podsR, &x.pods, &total.Pods},
	} {
		r, err := newObjectReader(c, o.objs)
		if err != nil {
			return err
		}
		b, err := c.read(o.idx, false)
		if err != nil {
			return err
		}
		ix, err := parseIndex(o.idx, b, r.table.count)
		if err != nil {
			return err
		}
		*o.r, *o.x, *o.n = r, ix, int(r.table.count)
	}
	return nil
}

// podsFor picks the Pods a partial load holds for the Services, slices
// and Endpoints objects of cl (see Partial).
func podsFor(cl *Cluster, pods *index) (picks, error) {
	out := picks{}
	for nn := range referencedPods(cl) {
		out.addRange(pods, nn.Namespace+"/"+nn.Name)
	}
	for i := range cl.Services {
		svc := &cl.Services[i]
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		lo, hi := pods.prefixRange(svc.Namespace + "/")
		for k := lo; k < hi; k++ {
			ok, err := labelsMatch(pods.extra(k), svc.Spec.Selector)
			if err != nil {
				return nil, fmt.Errorf("damaged file: %s: the labels of %s: %v", sectionLabel(pods.id), pods.key(k), err)
			}
			if ok {
				out[pods.obj(k)] = string(pods.key(k))
			}
		}
	}
	return out, nil
}

// picks are the objects of one section to load, by number, with the key
// each was found by (for errors).
type picks map[uint32]string

func (p picks) addRange(x *index, key string) {
	lo, hi := x.lookup(key)
	for i := lo; i < hi; i++ {
		p[x.obj(i)] = key
	}
}

func (p picks) sorted() []uint32 {
	out := make([]uint32, 0, len(p))
	for k := range p {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (p picks) name(i uint32) string { return p[i] }
