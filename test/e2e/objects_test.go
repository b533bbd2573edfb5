//go:build linux

package e2e

import (
	"fmt"
	"strings"
)

// endpoint is one EndpointSlice endpoint of the matrix.
type endpoint struct {
	pod, ip, node string
	// ready, serving, terminating; zero value means ready.
	notReady, terminating bool
	zone                  string
}

// yaml writes the endpoint; one without a node or a pod (the API server's
// own endpoint, which kube-apiserver writes) has no nodeName or targetRef.
func (e endpoint) yaml() string {
	ready := !e.notReady
	s := fmt.Sprintf(`- addresses: [%q]
  conditions: {ready: %t, serving: true, terminating: %t}
`, e.ip, ready, e.terminating)
	if e.node != "" {
		s += "  nodeName: " + e.node + "\n"
	}
	if e.pod != "" {
		s += "  targetRef: {kind: Pod, namespace: default, name: " + e.pod + "}\n"
	}
	if e.zone != "" {
		s += fmt.Sprintf("  zone: %s\n  hints: {forZones: [{name: %s}]}\n", e.zone, e.zone)
	}
	return s
}

// slicePort is a port of an EndpointSlice.
type slicePort struct {
	name, proto string
	port        int
}

// sliceYAML writes an EndpointSlice for service svc, as the controller
// would (the lab has no controller-manager, so slices are made by hand,
// as in the fixtures).
func sliceYAML(svc, name string, ports []slicePort, eps []endpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s
  namespace: default
  labels:
    kubernetes.io/service-name: %s
    endpointslice.kubernetes.io/managed-by: lab
addressType: IPv4
ports:
`, name, svc)
	for _, p := range ports {
		fmt.Fprintf(&b, "- {name: %q, port: %d, protocol: %s}\n", p.name, p.port, p.proto)
	}
	if len(eps) == 0 {
		b.WriteString("endpoints: []\n")
		return b.String()
	}
	b.WriteString("endpoints:\n")
	for _, e := range eps {
		b.WriteString(e.yaml())
	}
	return b.String()
}

// services is the matrix: one Service per case of the issue, all in
// namespace default. %s placeholders are none; addresses are fixed.
const services = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np, namespace: default}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  loadBalancerSourceRanges: [203.0.113.0/24]
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30082, protocol: TCP}]
status:
  loadBalancer:
    ingress: [{ip: 198.51.100.50, ipMode: VIP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-ext, namespace: default}
spec:
  selector: {app: web}
  externalIPs: [198.51.100.7]
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-local, namespace: default}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30081, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-itp, namespace: default}
spec:
  internalTrafficPolicy: Local
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: sticky, namespace: default}
spec:
  selector: {app: web}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: named, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: web, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: multi, namespace: default}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: alt, port: 81, targetPort: 8080, protocol: TCP}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: default}
spec:
  selector: {app: dns}
  ports:
  - {name: dns, port: 53, targetPort: 5353, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 5353, protocol: TCP}
---
apiVersion: v1
kind: Service
metadata: {name: sctp, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: sctp, port: 9999, targetPort: 9999, protocol: SCTP}]
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: default}
spec:
  selector: {app: nothing}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: draining, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: zoned, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
# The shapes every real cluster has (issue "Never a wrong answer"): an
# endpoint on a node's own address without nodeName, as kube-apiserver
# writes for default/kubernetes on a control-plane node ...
apiVersion: v1
kind: Service
metadata: {name: kube-api, namespace: default}
spec:
  ports: [{name: https, port: 443, targetPort: 6443, protocol: TCP}]
---
# ... a hostNetwork Pod behind a NodePort ...
apiVersion: v1
kind: Service
metadata: {name: hostnet, namespace: default}
spec:
  type: NodePort
  selector: {app: hostnet}
  ports: [{name: http, port: 80, targetPort: 8081, nodePort: 30083, protocol: TCP}]
---
# ... externalTrafficPolicy Local with no endpoint on node2, next to the
# localhost NodePorts of iptables mode ...
apiVersion: v1
kind: Service
metadata: {name: local-node1, namespace: default}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30084, protocol: TCP}]
---
# ... and an endpoint on the address a probe for "a pod" would take first
# (the last host of the cluster CIDR), as on a node with many Pods.
apiVersion: v1
kind: Service
metadata: {name: crowded, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: headless, namespace: default}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: extname, namespace: default}
spec:
  type: ExternalName
  externalName: example.com
`
