package inspect

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/svctrace/svctrace/snapshot"
)

// Watcher holds what kube-proxy watches, as kube-proxy does: every Service
// and EndpointSlice, and (for a node agent) its own Node. It remembers
// when each Service last changed in a way kube-proxy acts on, and pokes
// its owner (the agent's loop, the UI) on every such change.
type Watcher struct {
	node    string
	factory informers.SharedInformerFactory
	nodes   informers.SharedInformerFactory
	poke    func()

	mu sync.Mutex
	// changed is when each Service (namespace/name) last changed, by
	// itself or by one of its EndpointSlices, since the objects were
	// first listed; node is when the Node last did, and any when
	// anything did.
	changed     map[string]time.Time
	nodeChange  time.Time
	any         time.Time
	watchErrs   uint64
	lastWatchEr time.Time
}

// NewWatcher watches the Services and EndpointSlices, and the Node named
// node unless it is empty; poke is called on every change that counts.
func NewWatcher(cs kubernetes.Interface, node string, poke func()) (*Watcher, error) {
	w := &Watcher{node: node, poke: poke, changed: map[string]time.Time{}}
	// Fields kube-proxy never reads are dropped from the cache: on a
	// large cluster managedFields alone are most of an object.
	strip := informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	w.factory = informers.NewSharedInformerFactoryWithOptions(cs, 0, strip)
	watched := []cache.SharedIndexInformer{
		w.factory.Core().V1().Services().Informer(),
		w.factory.Discovery().V1().EndpointSlices().Informer(),
	}
	if node != "" {
		w.nodes = informers.NewSharedInformerFactoryWithOptions(cs, 0, strip,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + node }))
		watched = append(watched, w.nodes.Core().V1().Nodes().Informer())
	}
	for _, inf := range watched {
		if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, _ error) {
			w.mu.Lock()
			w.watchErrs++
			w.lastWatchEr = time.Now()
			w.mu.Unlock()
		}); err != nil {
			return nil, fmt.Errorf("watching the API: %w", err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					w.note(obj, nil)
				}
			},
			UpdateFunc: func(old, obj any) { w.note(obj, old) },
			DeleteFunc: func(obj any) { w.note(obj, nil) },
		}); err != nil {
			return nil, fmt.Errorf("watching the API: %w", err)
		}
	}
	return w, nil
}

// Start starts the watches, which run until ctx ends, and waits until
// each has listed its objects (or ctx ends).
func (w *Watcher) Start(ctx context.Context) error {
	w.Run(ctx)
	return w.WaitSynced(ctx)
}

// Run starts the watches; they run until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	for _, f := range w.factories() {
		f.Start(ctx.Done())
	}
}

// WaitSynced waits until each watch has listed its objects, or ctx ends.
func (w *Watcher) WaitSynced(ctx context.Context) error {
	for _, f := range w.factories() {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("listing %v from the API server: %w", typ, context.Cause(ctx))
			}
		}
	}
	return nil
}

func (w *Watcher) factories() []informers.SharedInformerFactory {
	if w.nodes != nil {
		return []informers.SharedInformerFactory{w.factory, w.nodes}
	}
	return []informers.SharedInformerFactory{w.factory}
}

// note records a change to obj (old is its previous state on an update).
// An update kube-proxy would ignore (status, labels of a Service, ...)
// is no change: only what its view of the node depends on counts.
func (w *Watcher) note(obj, old any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var svc string
	switch o := obj.(type) {
	case *corev1.Service:
		if p, ok := old.(*corev1.Service); ok && equality.Semantic.DeepEqual(p.Spec, o.Spec) {
			return
		}
		svc = o.Namespace + "/" + o.Name
	case *discoveryv1.EndpointSlice:
		if p, ok := old.(*discoveryv1.EndpointSlice); ok && equality.Semantic.DeepEqual(p.Endpoints, o.Endpoints) &&
			equality.Semantic.DeepEqual(p.Ports, o.Ports) && p.Labels[discoveryv1.LabelServiceName] == o.Labels[discoveryv1.LabelServiceName] {
			return
		}
		svc = o.Namespace + "/" + o.Labels[discoveryv1.LabelServiceName]
	case *corev1.Node:
		if p, ok := old.(*corev1.Node); ok && equality.Semantic.DeepEqual(p.Labels, o.Labels) &&
			equality.Semantic.DeepEqual(p.Status.Addresses, o.Status.Addresses) && equality.Semantic.DeepEqual(p.Spec.PodCIDRs, o.Spec.PodCIDRs) {
			return
		}
	default:
		return
	}
	now := time.Now()
	w.mu.Lock()
	if svc != "" {
		w.changed[svc] = now
	} else {
		w.nodeChange = now
	}
	w.any = now
	w.mu.Unlock()
	w.poke()
}

// ChangeTimes are when things last changed, as of one moment.
type ChangeTimes struct {
	// Services are when each Service (namespace/name) last changed, by
	// itself or by one of its EndpointSlices, since it was first listed.
	Services map[string]time.Time
	// Node is when the watched Node last changed; Any, anything.
	Node, Any time.Time
}

// Of is when what a finding of Service svc (namespace/name; "" for
// none) depends on last changed: the Service, or the Node, which every
// Service's rules depend on; anything for a finding of no Service.
func (c ChangeTimes) Of(svc string) time.Time {
	if svc == "" {
		return c.Any
	}
	if n := c.Services[svc]; n.After(c.Node) {
		return n
	}
	return c.Node
}

// Changes are the change times as of now.
func (w *Watcher) Changes() ChangeTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := ChangeTimes{Services: make(map[string]time.Time, len(w.changed)), Node: w.nodeChange, Any: w.any}
	for k, v := range w.changed {
		out.Services[k] = v
	}
	return out
}

// WatchErrors are the watches' errors so far and the time of the last.
func (w *Watcher) WatchErrors() (uint64, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchErrs, w.lastWatchEr
}

// Cluster is the objects held now. They are the cache's own: nothing may
// change them (the analysis only reads).
func (w *Watcher) Cluster() (*snapshot.Cluster, error) {
	svcs, err := w.factory.Core().V1().Services().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	slices, err := w.factory.Discovery().V1().EndpointSlices().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("endpointslices: %w", err)
	}
	var nodes []*corev1.Node
	if w.nodes != nil {
		if nodes, err = w.nodes.Core().V1().Nodes().Lister().List(labels.Everything()); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
	}
	c := &snapshot.Cluster{
		Services:       make([]corev1.Service, len(svcs)),
		EndpointSlices: make([]discoveryv1.EndpointSlice, len(slices)),
		Nodes:          make([]corev1.Node, len(nodes)),
	}
	for i, s := range svcs {
		c.Services[i] = *s
	}
	for i, s := range slices {
		c.EndpointSlices[i] = *s
	}
	for i, n := range nodes {
		c.Nodes[i] = *n
	}
	return c, nil
}
