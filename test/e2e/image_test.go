//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// imageRef is the reference the test gives the svctrace image it builds.
const imageRef = "svctrace.local/svctrace:e2e"

// svctracePods run the svctrace image on each node as the node agent will: on the host
// network, with NET_ADMIN and NET_RAW only, a read-only root file system, and a
// ServiceAccount that may read what kube-proxy reads; here they run `drift --local` once.
const svctracePods = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: svctrace, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: svctrace-reader}
rules:
- apiGroups: [""]
  resources: [services, endpoints, nodes, pods, namespaces]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: svctrace-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: svctrace-reader}
subjects:
- {kind: ServiceAccount, name: svctrace, namespace: kube-system}
`

func driftPod(node string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: svctrace-` + node + `, namespace: kube-system}
spec:
  nodeName: ` + node + `
  hostNetwork: true
  restartPolicy: Never
  serviceAccountName: svctrace
  containers:
  - name: svctrace
    image: ` + imageRef + `
    imagePullPolicy: Never
    args: [drift, --local, -A, --node, ` + node + `]
    securityContext:
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL], add: [NET_ADMIN, NET_RAW]}
`
}

// TestImageDriftInPod builds the svctrace image with hack/image.sh, as a user would, runs it
// on both nodes of a cluster whose kube-proxy runs as a DaemonSet, and reads "no drift" from
// each Pod's log: the image's kernel tools and in-cluster access work.
func TestImageDriftInPod(t *testing.T) {
	l := lab.Start(t, lab.Options{Nodes: 2, Kubelets: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	archive := filepath.Join(t.TempDir(), "svctrace.tar")
	build := exec.CommandContext(ctx, "bash", "hack/image.sh", "-o", archive, "-ref", imageRef, "-version", "e2e")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	if err := l.ImportImages(ctx, archive); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, podDeployment("web", "node1", "web", 2, false, `--tcp, "8080"`)+`---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`)
	if _, err := l.WaitEndpoints("default", "web", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.DeployKubeProxy("iptables", ""); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, svctracePods)
	for _, n := range []string{"node1", "node2"} {
		l.Apply(t, driftPod(n))
	}
	for _, n := range []string{"node1", "node2"} {
		pod := "svctrace-" + n
		var phase string
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			out, err := l.Kubectl(ctx, "-n", "kube-system", "get", "pod", pod, "-o", "jsonpath={.status.phase}")
			if phase = strings.TrimSpace(out); err == nil && (phase == "Succeeded" || phase == "Failed") {
				break
			}
		}
		logs, err := l.Kubectl(ctx, "-n", "kube-system", "logs", pod)
		if err != nil {
			t.Fatalf("%s: kubectl logs: %v", pod, err)
		}
		if phase != "Succeeded" || !strings.Contains(logs, "no drift") {
			t.Errorf("%s: phase %q, log:\n%s", pod, phase, logs)
		}
	}
}

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
