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

func (e endpoint) yaml() string {
	ready := !e.notReady
	s := fmt.Sprintf(`- addresses: [%q]
  conditions: {ready: %t, serving: true, terminating: %t}
  nodeName: %s
  targetRef: {kind: Pod, namespace: default, name: %s}
`, e.ip, ready, e.terminating, e.node, e.pod)
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
