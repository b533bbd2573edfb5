package agent

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

// watcher holds what kube-proxy watches, as kube-proxy does: every Service
// and EndpointSlice, and the agent's own Node. It remembers when each
// Service last changed in a way kube-proxy acts on, and pokes the agent's
// loop on every such change.
type watcher struct {
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

func newWatcher(cs kubernetes.Interface, node string, poke func()) (*watcher, error) {
	w := &watcher{node: node, poke: poke, changed: map[string]time.Time{}}
	// Fields kube-proxy never reads are dropped from the cache: on a
	// large cluster managedFields alone are most of an object.
	strip := informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	w.factory = informers.NewSharedInformerFactoryWithOptions(cs, 0, strip)
	w.nodes = informers.NewSharedInformerFactoryWithOptions(cs, 0, strip,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + node }))
	for _, inf := range []cache.SharedIndexInformer{
		w.factory.Core().V1().Services().Informer(),
		w.factory.Discovery().V1().EndpointSlices().Informer(),
		w.nodes.Core().V1().Nodes().Informer(),
	} {
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

// start starts the watches and waits until each has listed its objects
// (or ctx ends).
func (w *watcher) start(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	w.nodes.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{w.factory, w.nodes} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("listing %v from the API server: %w", typ, context.Cause(ctx))
			}
		}
	}
	return nil
}

// note records a change to obj (old is its previous state on an update).
// An update kube-proxy would ignore (status, labels of a Service, ...)
// is no change: only what its view of the node depends on counts.
func (w *watcher) note(obj, old any) {
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

// changeTimes are when things last changed, as of one moment.
type changeTimes struct {
	services  map[string]time.Time
	node, any time.Time
}

// of is when what a finding of Service svc (namespace/name; "" for
// none) depends on last changed: the Service, or the Node, which every
// Service's rules depend on; anything for a finding of no Service.
func (c changeTimes) of(svc string) time.Time {
	if svc == "" {
		return c.any
	}
	return later(c.services[svc], c.node)
}

// changes are the change times as of now.
func (w *watcher) changes() changeTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := changeTimes{services: make(map[string]time.Time, len(w.changed)), node: w.nodeChange, any: w.any}
	for k, v := range w.changed {
		out.services[k] = v
	}
	return out
}

// watchErrors are the watches' errors so far and the time of the last.
func (w *watcher) watchErrors() (uint64, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchErrs, w.lastWatchEr
}

// cluster is the objects held now. They are the cache's own: nothing may
// change them (the analysis only reads).
func (w *watcher) cluster() (*snapshot.Cluster, error) {
	svcs, err := w.factory.Core().V1().Services().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	slices, err := w.factory.Discovery().V1().EndpointSlices().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("endpointslices: %w", err)
	}
	nodes, err := w.nodes.Core().V1().Nodes().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
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
