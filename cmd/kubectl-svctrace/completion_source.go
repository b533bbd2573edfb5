package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Where completions come from: the snapshot or objects file on the
// command line, else the cluster its kubeconfig flags point at.

// completionTimeout bounds the API calls of one completion: the shell
// waits for them.
const completionTimeout = 5 * time.Second

// offlineObjects are the API objects and node names of the snapshot or
// objects file named on a command line.
type offlineObjects struct {
	cluster snapshot.Cluster
	nodes   []string
}

// fileObjects reads the snapshot (--snapshot) or objects file (--objects)
// named on the command line; nil when neither is.
func fileObjects(cmd *cobra.Command) (*offlineObjects, error) {
	o := &offlineObjects{}
	if path := flagValue(cmd, "snapshot"); path != "" {
		s, err := snapshot.Load(path)
		if err != nil {
			return nil, err
		}
		if s.Cluster != nil {
			o.cluster = *s.Cluster
		}
		for _, n := range s.Nodes {
			o.nodes = append(o.nodes, n.Name)
		}
		return o, nil
	}
	if path := flagValue(cmd, "objects"); path != "" {
		c, _, err := decodeObjectsFile(path)
		if err != nil {
			return nil, err
		}
		o.cluster = *c
		for _, n := range c.Nodes {
			o.nodes = append(o.nodes, n.Name)
		}
		return o, nil
	}
	return nil, nil
}

// listServices returns the Services in namespace ns ("" for all): from
// the snapshot or objects file on the command line, else from the cluster.
func listServices(ctx context.Context, cmd *cobra.Command, ns string) ([]corev1.Service, error) {
	o, err := fileObjects(cmd)
	if err != nil {
		return nil, err
	}
	if o != nil {
		var out []corev1.Service
		for _, s := range o.cluster.Services {
			if ns == "" || s.Namespace == ns {
				out = append(out, s)
			}
		}
		return out, nil
	}
	cs, err := completionClient(cmd)
	if err != nil {
		return nil, err
	}
	l, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Services: %w", err)
	}
	return l.Items, nil
}

// nodeNames lists the nodes --node can name: the snapshot's, the objects
// file's, else the cluster's.
func nodeNames(ctx context.Context, cmd *cobra.Command) ([]string, error) {
	o, err := fileObjects(cmd)
	if err != nil {
		return nil, err
	}
	if o != nil {
		return o.nodes, nil
	}
	cs, err := completionClient(cmd)
	if err != nil {
		return nil, err
	}
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	var names []string
	for _, n := range l.Items {
		names = append(names, n.Name)
	}
	return names, nil
}

// namespaceNames lists the namespaces of the snapshot's or objects
// file's objects, else the cluster's namespaces.
func namespaceNames(ctx context.Context, cmd *cobra.Command) ([]string, error) {
	o, err := fileObjects(cmd)
	if err != nil {
		return nil, err
	}
	if o != nil {
		seen := map[string]bool{}
		var out []string
		add := func(ns string) {
			if ns != "" && !seen[ns] {
				seen[ns] = true
				out = append(out, ns)
			}
		}
		for _, s := range o.cluster.Services {
			add(s.Namespace)
		}
		for _, e := range o.cluster.EndpointSlices {
			add(e.Namespace)
		}
		for _, p := range o.cluster.Pods {
			add(p.Namespace)
		}
		sort.Strings(out)
		return out, nil
	}
	cs, err := completionClient(cmd)
	if err != nil {
		return nil, err
	}
	l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Namespaces: %w", err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	return out, nil
}

// completionClient is an API client for the cluster the command line's
// kubeconfig flags point at.
func completionClient(cmd *cobra.Command) (kubernetes.Interface, error) {
	cf, err := configFlagsFrom(cmd.Flags())
	if err != nil {
		return nil, err
	}
	cfg, err := restConfig(cf)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = completionTimeout
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating API client: %w", err)
	}
	return cs, nil
}

// defaultNamespace is the namespace a Service reference without one is
// read in: -n, else the kubeconfig context's, else "default".
func defaultNamespace(cmd *cobra.Command) string {
	if ns := flagValue(cmd, "namespace"); ns != "" {
		return ns
	}
	if cf, err := configFlagsFrom(cmd.Flags()); err == nil {
		if ns, _, err := cf.ToRawKubeConfigLoader().Namespace(); err == nil && ns != "" {
			return ns
		}
	}
	return "default"
}

func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
