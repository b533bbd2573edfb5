package survey_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/survey"
)

func load(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func find(rows []survey.Service, ns, name string) (survey.Service, bool) {
	for _, r := range rows {
		if r.Namespace == ns && r.Name == name {
			return r, true
		}
	}
	return survey.Service{}, false
}

// TestServices: the rows say what the API says (type, frontends, the
// endpoint conditions), and which nodes drift.
func TestServices(t *testing.T) {
	s := load(t, "lab-nftables-v1.36.3.snapshot.yaml")
	v := survey.New(s, "lab", survey.Options{})
	rows := v.Services("")
	if len(rows) != 21 {
		t.Fatalf("%d Services, want the snapshot's 21", len(rows))
	}
	for _, c := range []struct {
		name, typ                string
		ready, serving, total    int
		frontendsAtLeast, drifts int
	}{
		{"web", "ClusterIP", 3, 3, 3, 1, 0},
		{"draining", "ClusterIP", 0, 1, 1, 1, 0},
		{"headless", "Headless", 0, 0, 0, 0, 0},
		{"web-lb", "LoadBalancer", 3, 3, 3, 3, 0},
	} {
		r, ok := find(rows, "default", c.name)
		if !ok {
			t.Fatalf("default/%s is not listed", c.name)
		}
		if r.Type != c.typ || r.Ready != c.ready || r.Serving != c.serving || r.Total != c.total || len(r.Frontends) < c.frontendsAtLeast || r.Findings != c.drifts {
			t.Errorf("default/%s: %+v", c.name, r)
		}
	}
	if got := v.Services("kube-system"); slices.ContainsFunc(got, func(r survey.Service) bool { return r.Namespace != "kube-system" }) {
		t.Errorf("a namespace's rows hold others: %+v", got)
	}

	// The API drops an endpoint both nodes still send to.
	for i := range s.Cluster.EndpointSlices {
		es := &s.Cluster.EndpointSlices[i]
		if es.Namespace == "default" && es.Labels["kubernetes.io/service-name"] == "web" {
			es.Endpoints = es.Endpoints[1:]
		}
	}
	v = survey.New(s, "lab", survey.Options{})
	r, _ := find(v.Services(""), "default", "web")
	if r.Findings != 2 || !slices.Equal(r.Nodes, []string{"node1", "node2"}) || r.Total != 2 {
		t.Errorf("default/web after the API dropped an endpoint: %+v", r)
	}
}

// TestMatrix: one column per frontend and class, a NodePort one column
// whatever each node's address, a cell per node; drift marks the cells
// its findings name.
func TestMatrix(t *testing.T) {
	s := load(t, "lab-nftables-v1.36.3.snapshot.yaml")
	v := survey.New(s, "lab", survey.Options{})
	m, err := v.Matrix(analysis.ServiceRef{Namespace: "default", Name: "web-np"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 2 {
		t.Fatalf("%d rows, want one per node", len(m.Rows))
	}
	var nodePorts int
	for _, k := range m.Frontends {
		if k.Kind == behavior.NodePort {
			nodePorts++
			if k.IP != "" {
				t.Errorf("a NodePort column names an address: %v", k)
			}
		}
	}
	if nodePorts != 1 {
		t.Errorf("%d NodePort columns, want 1: %v", nodePorts, m.Frontends)
	}
	for _, r := range m.Rows {
		for i, cells := range r.Cells {
			for j, c := range cells {
				if c.Missing || c.Drift || c.Verdict != behavior.Forward || c.Backends != 3 {
					t.Errorf("%s, %v, %s: %+v, want forwarded to 3", r.Node, m.Frontends[i], behavior.SourceClasses[j], c)
				}
			}
		}
	}
	if _, err := v.Matrix(analysis.ServiceRef{Namespace: "default", Name: "wbe"}); err == nil {
		t.Error("a misspelt Service gives no error")
	}
}

// TestUnreadNode: a node the source could not read is listed with why.
func TestUnreadNode(t *testing.T) {
	s := load(t, "lab-nftables-v1.36.3.snapshot.yaml")
	v := survey.New(s, "lab", survey.Options{Unread: []analysis.NodeFindings{{Node: "node3", Err: errTimeout}}})
	nodes := v.Nodes()
	if len(nodes) != 3 || nodes[2].Name != "node3" || nodes[2].Err != errTimeout {
		t.Fatalf("nodes %+v", nodes)
	}
	if _, err := v.Explain(analysis.ServiceRef{Namespace: "default", Name: "web"}, "node3"); err == nil {
		t.Error("an unread node explains")
	}
	m, err := v.Matrix(analysis.ServiceRef{Namespace: "default", Name: "web"})
	if err != nil || m.Rows[2].Err == nil {
		t.Errorf("the matrix hides the unread node: %v %+v", err, m)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string { return "timed out" }

var errTimeout error = timeoutError{}

// TestPending: a Service that changed after its node was read, or less
// than Settle before, has pending differences, not drift; one that
// changed long before has drift.
func TestPending(t *testing.T) {
	s := load(t, "lab-nftables-v1.36.3.snapshot.yaml")
	for i := range s.Cluster.EndpointSlices {
		es := &s.Cluster.EndpointSlices[i]
		if es.Namespace == "default" && es.Labels["kubernetes.io/service-name"] == "web" {
			es.Endpoints = es.Endpoints[1:]
		}
	}
	read := s.Nodes[0].CapturedAt
	for _, c := range []struct {
		name    string
		changed time.Time
		pending bool
	}{
		{"after the read", read.Add(time.Second), true},
		{"just before the read", read.Add(-3 * time.Second), true},
		{"long before the read", read.Add(-time.Hour), false},
	} {
		v := survey.New(s, "lab", survey.Options{Changed: map[string]time.Time{"default/web": c.changed}, Settle: 10 * time.Second})
		var pendingOn1, driftOn1 int
		for _, f := range v.Pending() {
			if f.Node == "node1" {
				pendingOn1++
			}
		}
		for _, f := range v.Findings() {
			if f.Node == "node1" {
				driftOn1++
			}
		}
		if c.pending != (pendingOn1 == 1 && driftOn1 == 0) || !c.pending != (driftOn1 == 1 && pendingOn1 == 0) {
			t.Errorf("changed %s: %d pending, %d findings on node1", c.name, pendingOn1, driftOn1)
		}
		r, _ := find(v.Services(""), "default", "web")
		m, err := v.Matrix(r.Ref())
		if err != nil {
			t.Fatal(err)
		}
		if cell := m.Rows[0].Cells[0][0]; cell.Pending != c.pending || cell.Drift == c.pending {
			t.Errorf("changed %s: node1's first cell %+v", c.name, cell)
		}
	}
}

// TestUncheckedMode: on a node whose mode drift cannot check yet (ipvs),
// the drift report is an error, but the node is listed and its Services
// are explained on it.
func TestUncheckedMode(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "examples", "lab-nftables-v1.36.3.snapshot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join("..", "testdata", "seeds", "ipvsadm-ln.minikube.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s.Nodes = []snapshot.NodeState{{Name: "node1", KubeProxy: snapshot.ProxyConfig{Mode: "ipvs"},
		Dumps: []snapshot.Dump{{Collector: "ipvsadm", Text: string(table)}}}}
	v := survey.New(s, "ipvs", survey.Options{})
	if _, err := v.Drift(); err == nil || !strings.Contains(err.Error(), "drift in ipvs mode is not checked") {
		t.Errorf("drift: %v", err)
	}
	nodes := v.Nodes()
	if len(nodes) != 1 || nodes[0].Err != nil || nodes[0].Mode != "ipvs" {
		t.Fatalf("nodes %+v", nodes)
	}
	m, err := v.Matrix(analysis.ServiceRef{Namespace: "default", Name: "kubernetes"})
	if err != nil || len(m.Rows) != 1 || m.Rows[0].Err != nil {
		t.Fatalf("matrix %+v, %v", m, err)
	}
}
