package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	nsrun "github.com/svctrace/svctrace/internal/netns"
)

// serveInNetns serves h on a loopback port of the network namespace ns
// (the binary under test runs there) and returns its address.
func serveInNetns(t *testing.T, ns string, h http.Handler) string {
	t.Helper()
	var ln net.Listener
	if err := nsrun.Run(filepath.Join("/run/netns", ns), func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// TestConfigzCheckLocalApply: on a node (--local) whose port 10249
// serves a forged /configz (a bridge detector the kube-proxy ConfigMap
// never set), reconcile rules --apply fails with exit code 2 naming the
// settings before anything is written, and a dry run warns; the /configz
// of the real kube-proxy plans without a warning. The API server is a
// test server in the node's namespace serving the lab's kube-proxy
// ConfigMap and Pod.
func TestConfigzCheckLocalApply(t *testing.T) {
	requireRoot(t)
	requireTools(t, "ip", "iptables-nft-save", "iptables-legacy-save")
	objs, _ := configzLab(t, nil)
	item := func(kind string, i int) string {
		b, err := json.Marshal(objs[i])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Replace(string(b), "{", `{"kind":"`+kind+`","apiVersion":"v1",`, 1)
	}
	answers := map[string]string{
		"/api/v1/services": `{"kind":"ServiceList","apiVersion":"v1","items":[{"metadata":{"name":"kubernetes","namespace":"default"},` +
			`"spec":{"type":"ClusterIP","clusterIP":"10.96.0.1","clusterIPs":["10.96.0.1"],"ipFamilies":["IPv4"],"ports":[{"name":"https","protocol":"TCP","port":443,"targetPort":6443}]}}]}`,
		"/apis/discovery.k8s.io/v1/endpointslices": `{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","items":[]}`,
		"/api/v1/nodes":                       `{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"node1"},"status":{"addresses":[{"type":"InternalIP","address":"192.0.2.10"}]}}]}`,
		"/api/v1/pods":                        `{"kind":"PodList","apiVersion":"v1","items":[]}`,
		"/api/v1/endpoints":                   `{"kind":"EndpointsList","apiVersion":"v1","items":[]}`,
		"/api/v1/namespaces/kube-system/pods": `{"kind":"PodList","apiVersion":"v1","items":[` + item("Pod", 1) + `]}`,
		"/api/v1/namespaces/kube-system/configmaps/kube-proxy": item("ConfigMap", 0),
	}
	ns := netns(t)
	if out, code := inNetns(t, ns, "", "ip", "link", "set", "lo", "up"); code != 0 {
		t.Fatalf("ip link set lo up: %s", out)
	}
	api := serveInNetns(t, ns, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	kubeconfig := writeKubeconfig(t, "http://"+api)
	proxy := func(edit func(map[string]any)) string {
		var doc map[string]map[string]any
		if err := json.Unmarshal(mustRead(t, configzTestdata+"kubeadm-iptables-configz.json"), &doc); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(doc["kubeproxy.config.k8s.io"])
		}
		configz, _ := json.Marshal(doc)
		return serveInNetns(t, ns, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/configz":
				_, _ = w.Write(configz)
			case "/metrics":
				_, _ = w.Write([]byte(`kubernetes_build_info{git_version="v1.36.3"} 1` + "\n"))
			default:
				http.NotFound(w, r)
			}
		}))
	}
	forged, real := proxy(forgeBridge), proxy(nil)
	bin := buildBinary(t)
	dir := t.TempDir()
	rules := func(metrics string, args ...string) (string, int) {
		return inNetns(t, ns, "", append([]string{bin, "reconcile", "rules", "--local", "--node", "node1", "--kubeconfig", kubeconfig,
			"--kube-proxy-metrics-address", metrics, "--iptables-backend", "nf_tables", "--lock-file", filepath.Join(dir, "lock"),
			"--backup", filepath.Join(dir, "backup.yaml")}, args...)...)
	}

	out, code := rules(forged, "--apply", "--force")
	if code != exitError {
		t.Fatalf("apply with a forged /configz: exit %d, want %d:\n%s", code, exitError, out)
	}
	for _, want := range []string{"refusing to repair", `detectLocalMode: "BridgeInterface" in /configz, "ClusterCIDR" in the cluster`,
		"the --config of Pod kube-system/kube-proxy-", "ss -ltnp 'sport = :"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out[max(0, len(out)-1500):])
		}
	}
	if strings.Contains(out, "backup:") || strings.Contains(out, "wrote ") {
		t.Errorf("the refused apply went as far as a write:\n%s", out)
	}
	if saved, _ := inNetns(t, ns, "", "iptables-nft-save"); strings.Contains(saved, "KUBE-") {
		t.Errorf("the refused apply wrote rules:\n%s", saved)
	}

	out, code = rules(forged)
	if code != exitDrift || !strings.Contains(out, "warning: kube-proxy's /configz at "+forged+", a port without authentication, disagrees") {
		t.Errorf("dry run with a forged /configz: exit %d, want %d with a warning:\n%s", code, exitDrift, out)
	}
	out, code = rules(real)
	if code != exitDrift || strings.Contains(out, "warning") || !strings.Contains(out, "create nat KUBE-SERVICES") {
		t.Errorf("dry run with kube-proxy's /configz: exit %d, want %d, a plan and no warning:\n%s", code, exitDrift, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
