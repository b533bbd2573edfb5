//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// Kubectl runs the lab's kubectl (built from the same module as the control plane) as admin,
// inside the control-plane namespace, and returns its stdout; the error carries stderr. It
// needs Options.Kubelets for exec, logs and port-forward, which reach the nodes' kubelets.
func (l *Lab) Kubectl(ctx context.Context, args ...string) (string, error) {
	bin := filepath.Join(CacheDir(), l.K8sVersion, "kubectl")
	return nsExec(ctx, l.cpNS, append([]string{bin, "--kubeconfig=" + l.Kubeconfig}, args...)...)
}

// WaitEndpoints waits until the EndpointSlices of Service namespace/name list ready endpoints
// at exactly ready addresses (counted once each), and returns them.
func (l *Lab) WaitEndpoints(namespace, name string, ready int, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	var last []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := l.api.do(ctx, "GET", "/apis/discovery.k8s.io/v1/namespaces/"+namespace+
			"/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D"+name, "", nil)
		cancel()
		if err == nil {
			var list struct {
				Items []struct {
					Endpoints []struct {
						Addresses  []string
						Conditions struct{ Ready *bool }
					}
				}
			}
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			last = last[:0]
			for _, it := range list.Items {
				for _, ep := range it.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 && !seen[ep.Addresses[0]] {
						seen[ep.Addresses[0]] = true
						last = append(last, ep.Addresses[0])
					}
				}
			}
			if len(last) == ready {
				return last, nil
			}
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("lab: Service %s/%s: %d ready endpoints after %v, want %d (%v)", namespace, name, len(last), timeout, ready, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
