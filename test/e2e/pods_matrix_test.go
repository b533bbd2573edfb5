//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/svctrace/svctrace/test/lab"
)

// The matrix on real Pods: the lab's nodes run kubelets, kube-proxy runs as a DaemonSet, the
// backends are Pods of Deployments, and the EndpointSlice controller makes the slices of every
// Service with a selector. The Services whose slices have shapes a controller makes only at
// some moment (a terminating endpoint, topology hints, an endpoint outside any Pod, a subset of
// the Pods) keep hand-made slices and lose their selector.
var handMadeSlices = map[string]bool{"draining": true, "zoned": true, "crowded": true, "kube-api": true, "local-node1": true}

// podDeployment is a Deployment of labnet servers on one node; each answers with its Pod's
// name, and is ready while its ready file exists (labnet remove fails the probe).
func podDeployment(name, node, app string, replicas int, hostNetwork bool, serve string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  replicas: %[4]d
  selector: {matchLabels: {deployment: %[1]s}}
  template:
    metadata: {labels: {deployment: %[1]s, app: %[3]s}}
    spec:
      nodeSelector: {kubernetes.io/hostname: %[2]s}
      hostNetwork: %[5]t
      terminationGracePeriodSeconds: 30
      containers:
      - name: labnet
        image: %[6]s
        imagePullPolicy: Never
        args: [serve, --name, $(POD_NAME), --ready-file, /ready, %[7]s]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports: [{name: web, containerPort: 8080}]
        readinessProbe:
          exec: {command: [/labnet, exists, /ready]}
          periodSeconds: 1
          failureThreshold: 1
        lifecycle:
          preStop: {sleep: {seconds: 20}}
`, name, node, app, replicas, hostNetwork, lab.LabnetImage, serve)
}

// podWorkloads are the matrix's Pods: web-1 and web-2 on node1 and web-3 on node2 (app=web),
// dns-1 and dns-2 (app=dns), a hostNetwork server on node2, and a client on each node.
var podWorkloads = strings.Join([]string{
	podDeployment("web-a", "node1", "web", 2, false, "--tcp, \"8080\""),
	podDeployment("web-b", "node2", "web", 1, false, "--tcp, \"8080\""),
	podDeployment("dns-a", "node1", "dns", 1, false, "--tcp, \"5353\", --udp, \"5353\""),
	podDeployment("dns-b", "node2", "dns", 1, false, "--tcp, \"5353\", --udp, \"5353\""),
	podDeployment("hostnet", "node2", "hostnet", 1, true, "--tcp, \"8081\""),
	podDeployment("client-a", "node1", "client", 1, false, "--tcp, \"7777\""),
	podDeployment("client-b", "node2", "client", 1, false, "--tcp, \"7777\""),
}, "---\n")

// podRoles names the matrix's roles after the Deployments' Pods: by Deployment, in name order.
var podRoles = map[string][]string{
	"web-a": {"web-1", "web-2"}, "web-b": {"web-3"}, "dns-a": {"dns-1"}, "dns-b": {"dns-2"},
	"hostnet": {"hostnet-1"}, "client-a": {"client"}, "client-b": {"client-2"},
}

// TestMatrixOnPods runs the matrix on real Pods with kube-proxy as a DaemonSet, in iptables
// and in nftables mode: no drift while all is healthy; real connections from a Pod land only
// on the backends trace predicts, and on all of them; a Pod whose readiness probe starts
// failing leaves the endpoints, and a Pod deleted with a preStop sleep stays as a terminating
// endpoint, with svctrace agreeing with kube-proxy throughout.
func TestMatrixOnPods(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) { runPodsMatrix(t, mode) })
	}
}

func runPodsMatrix(t *testing.T, mode string) {
	m, err := loadMatrix(matrixFile)
	if err != nil {
		t.Fatal(err)
	}
	l := lab.Start(t, lab.Options{Nodes: 2, Kubelets: true})
	c := &cluster{Lab: l, bin: buildSvctrace(t), pods: map[string]*lab.Pod{}, mode: mode, version: l.ProxyVersion}
	l.Apply(t, podWorkloads)
	if err := c.DeployKubeProxy(mode, ""); err != nil {
		t.Fatal(err)
	}
	for dep := range podRoles {
		if _, err := c.Kubectl(t.Context(), "rollout", "status", "deployment/"+dep, "--timeout=2m"); err != nil {
			t.Fatalf("deployment %s: %v", dep, err)
		}
	}
	c.readPodRoles(t)
	c.setZones(t, "")
	services, err := podsServices(m.services)
	if err != nil {
		t.Fatal(err)
	}
	if c.matrix, err = m.expand(c.pods, c.nodeIP); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, services)
	l.Apply(t, c.handMadeSlices())
	for _, n := range []string{"node1", "node2"} {
		if err := c.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("healthy", func(t *testing.T) {
		for _, n := range []string{"node1", "node2"} {
			waitDrift(t, c, n, nil)
		}
	})
	t.Run("traffic", func(t *testing.T) { c.checkPodsTraffic(t) })
	t.Run("terminating", func(t *testing.T) { c.checkTerminating(t) })
	t.Run("readiness", func(t *testing.T) { c.checkReadiness(t) })
	t.Run("changes", func(t *testing.T) { c.checkPodsChanges(t) })
}

// readPodRoles finds the Pods of podRoles and fills c.pods by role.
func (c *cluster) readPodRoles(t *testing.T) {
	t.Helper()
	clear(c.pods)
	out, err := c.Kubectl(t.Context(), "get", "pods", "-o",
		`jsonpath={range .items[*]}{.metadata.labels.deployment} {.metadata.name} {.spec.nodeName} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	byDep := map[string][][3]string{}
	for line := range strings.Lines(out) {
		// A Pod being deleted has a fifth field, and no role.
		f := strings.Fields(line)
		if len(f) == 4 {
			byDep[f[0]] = append(byDep[f[0]], [3]string{f[1], f[2], f[3]})
		}
	}
	for dep, roles := range podRoles {
		pods := byDep[dep]
		sort.Slice(pods, func(i, j int) bool { return pods[i][0] < pods[j][0] })
		if len(pods) != len(roles) {
			t.Fatalf("deployment %s has Pods %v, want %d", dep, pods, len(roles))
		}
		for i, role := range roles {
			c.pods[role] = &lab.Pod{Namespace: "default", Name: pods[i][0], Node: pods[i][1], IP: pods[i][2]}
		}
	}
}

// podsServices is the matrix's Services with the selector removed from those with hand-made
// slices.
func podsServices(docs string) (string, error) {
	dec := yaml.NewDecoder(strings.NewReader(docs))
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	for {
		var svc map[string]any
		if err := dec.Decode(&svc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", err
		}
		meta, _ := svc["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); handMadeSlices[name] {
			if spec, ok := svc["spec"].(map[string]any); ok {
				delete(spec, "selector")
			}
		}
		if err := enc.Encode(svc); err != nil {
			return "", err
		}
	}
	return out.String(), enc.Close()
}

// handMadeSlices are the slices of the Services in handMadeSlices, their targetRefs naming
// the real Pods.
func (c *cluster) handMadeSlices() string {
	var keep []matrixSlice
	for _, s := range c.matrix {
		if !handMadeSlices[s.service] {
			continue
		}
		s.endpoints = slices.Clone(s.endpoints)
		for i, e := range s.endpoints {
			if p, ok := c.pods[e.pod]; ok {
				s.endpoints[i].pod = p.Name
			}
		}
		keep = append(keep, s)
	}
	return slicesYAML(keep, nil)
}

// role is the matrix role of a Pod's name ("" when none).
func (c *cluster) role(pod string) string {
	for r, p := range c.pods {
		if p.Name == pod {
			return r
		}
	}
	return ""
}

// dialFrom dials from a role's Pod, or from a node's namespace (node1, node2), and names the
// backends by role.
func (c *cluster) dialFrom(t *testing.T, from, proto, dst string, count int) lab.DialResult {
	t.Helper()
	var res lab.DialResult
	var err error
	if p, ok := c.pods[from]; ok {
		res, err = c.DialFromPod("default", p.Name, proto, dst, count)
	} else {
		res, err = c.Dial(from, proto, dst, count)
	}
	if err != nil {
		t.Fatal(err)
	}
	named := lab.DialResult{Hits: map[string]int{}, Errors: res.Errors}
	for pod, n := range res.Hits {
		r := c.role(pod)
		if r == "" {
			r = pod
		}
		named.Hits[r] += n
	}
	return named
}

// checkPodsTraffic checks the matrix's flows from the client Pod (kubectl exec), and a
// hostNetwork Pod behind a NodePort.
func (c *cluster) checkPodsTraffic(t *testing.T) {
	c.trafficFlows(t, c.dialFrom, flow{name: "hostNetwork Pod behind a NodePort", from: "client", proto: "tcp", dst: "192.0.2.10:30083", want: []string{"hostnet-1"}})
}

// waitPredicted polls trace for Service svc's ClusterIP from the client until it predicts
// want.
func (c *cluster) waitPredicted(t *testing.T, svc string, want []string) {
	t.Helper()
	dst := clusterIP(t, c, svc) + ":80/tcp"
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		pred, _ := c.predictedFrom(t, "node1", c.pods["client"].IP, dst, "--from", "pod")
		if got = keys(pred); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("trace of %s predicts %v, want %v", svc, got, want)
}

// checkTerminating deletes web-3's Pod, which sleeps 20 s in preStop: meanwhile its endpoint is
// terminating in the controller's slice, and svctrace agrees with kube-proxy on both nodes.
func (c *cluster) checkTerminating(t *testing.T) {
	victim := c.pods["web-3"].Name
	if _, err := c.Kubectl(t.Context(), "delete", "pod", victim, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	var slice string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		out, err := c.Kubectl(t.Context(), "get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o",
			`jsonpath={range .items[*].endpoints[*]}{.targetRef.name}={.conditions.terminating} {end}`)
		if err == nil && strings.Contains(out, victim+"=true") {
			slice = out
			break
		}
	}
	if slice == "" {
		t.Fatalf("Pod %s never showed as a terminating endpoint", victim)
	}
	t.Logf("web's endpoints while %s terminates: %s", victim, slice)
	for _, n := range []string{"node1", "node2"} {
		if err := c.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
		waitDrift(t, c, n, nil)
	}
	// The Deployment's new Pod takes web-3's role once the old one is gone.
	if _, err := c.Kubectl(t.Context(), "wait", "--for=delete", "pod/"+victim, "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(t.Context(), "rollout", "status", "deployment/web-b", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	c.readPodRoles(t)
	c.waitPredicted(t, "web", []string{"web-1", "web-2", "web-3"})
}

// checkReadiness fails web-2's readiness probe: its endpoint goes, kube-proxy follows, and so
// does svctrace, with no drift on either node; then passes it again.
func (c *cluster) checkReadiness(t *testing.T) {
	if _, err := c.Kubectl(t.Context(), "exec", c.pods["web-2"].Name, "--", "/labnet", "remove", "/ready"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEndpoints("default", "web", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	c.waitPredicted(t, "web", []string{"web-1", "web-3"})
	for _, n := range []string{"node1", "node2"} {
		if err := c.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
		waitDrift(t, c, n, nil)
	}
	res := c.dialFrom(t, "client", "tcp", clusterIP(t, c, "web")+":80", 48)
	if res.Hits["web-2"] > 0 || res.Hits["web-1"] == 0 || res.Hits["web-3"] == 0 {
		t.Errorf("with web-2 unready, connections reached %v", res)
	}
	// Ready again: the endpoint comes back.
	if _, err := c.Kubectl(t.Context(), "exec", c.pods["web-2"].Name, "--", "/labnet", "create", "/ready"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEndpoints("default", "web", 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	c.waitPredicted(t, "web", []string{"web-1", "web-2", "web-3"})
}

// soloService selects the Pods of solo-a (node1) and solo-b (node2) alone: a readiness change
// of web's Pods would move every Service of the matrix that selects them.
const soloService = `apiVersion: v1
kind: Service
metadata: {name: solo, namespace: default}
spec:
  selector: {app: solo}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`

// checkPodsChanges takes kube-proxy's Pod off node1 and makes one change at a time, each undone
// before the next, as checkChanges does with the process; a Pod put back repairs everything.
func (c *cluster) checkPodsChanges(t *testing.T) {
	c.Apply(t, strings.Join([]string{
		podDeployment("solo-a", "node1", "solo", 1, false, `--tcp, "8080"`),
		podDeployment("solo-b", "node2", "solo", 1, false, `--tcp, "8080"`),
		soloService}, "---\n"))
	eps, err := c.WaitEndpoints("default", "solo", 2, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSynced("node1"); err != nil {
		t.Fatal(err)
	}
	waitDrift(t, c, "node1", nil)
	if err := c.StopKubeProxyPod("node1"); err != nil {
		t.Fatal(err)
	}
	t.Run("endpoint not ready", func(t *testing.T) {
		out, err := c.Kubectl(t.Context(), "get", "pods", "-l", "deployment=solo-b", "-o", "jsonpath={.items[0].metadata.name} {.items[0].status.podIP}")
		if err != nil {
			t.Fatal(err)
		}
		pod, ip, _ := strings.Cut(out, " ")
		if !slices.Contains(eps, ip) {
			t.Fatalf("solo-b's Pod %s at %q is not among solo's endpoints %v", pod, ip, eps)
		}
		readiness := func(verb string, ready int) {
			if _, err := c.Kubectl(t.Context(), "exec", pod, "--", "/labnet", verb, "/ready"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.WaitEndpoints("default", "solo", ready, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		readiness("remove", 1)
		waitDrift(t, c, "node1", []string{"StaleEndpoint default/solo:http absent|" + ip + ":8080"})
		readiness("create", 2)
		waitDrift(t, c, "node1", nil)
	})
	apiChanges(t, c, func(t *testing.T) func() {
		// The EndpointSlice controller gives the new Service its endpoints, and takes them
		// away with it.
		if _, err := c.WaitEndpoints("default", "late", 3, time.Minute); err != nil {
			t.Fatal(err)
		}
		return func() {}
	})
	kernelChanges(t, c)
	t.Run("kube-proxy's Pod back repairs everything", func(t *testing.T) {
		if err := c.StartKubeProxyPod("node1"); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitSynced("node1"); err != nil {
			t.Fatal(err)
		}
		// A kube-proxy just started may miss its zone label and spread
		// default/zoned over every zone (see relabelZones): CI met it here.
		c.relabelZones(t, "node1", "node2")
		waitDrift(t, c, "node1", nil)
		waitDrift(t, c, "node2", nil)
	})
}
