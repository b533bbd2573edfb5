//go:build linux

package lab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Addresses of the lab network. Nodes and the control plane share 192.0.2.0/24 on a bridge in
// the "net" namespace; pods use 10.244.<node index>.0/24, Services 10.96.0.0/16.
const (
	BridgeIP     = "192.0.2.1" // the bridge in the net namespace (gateway of the nodes; no forwarding)
	APIServerIP  = "192.0.2.2" // the control-plane namespace (etcd, kube-apiserver)
	APIPort      = 6443
	ClusterCIDR  = "10.244.0.0/16"
	ServiceCIDR  = "10.96.0.0/16"
	firstNodeIP  = 10 // node1 = 192.0.2.10, node2 = 192.0.2.11, ...
	metricsAddr  = "127.0.0.1:10249"
	podGatewayIP = "169.254.1.1" // pods' default gateway, answered by a static neighbour entry
)

// TB is what the lab needs of its caller: a test (*testing.T, testing.TB), or the runner of
// hack/lab.sh. Fatalf and Skipf must not return.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// Options configures Start.
type Options struct {
	// Nodes is the number of node namespaces (node1..nodeN). Default 1, at most 200.
	Nodes int
	// K8sVersion selects kube-apiserver; default K8sVersion() (SVCTRACE_LAB_K8S_VERSION).
	K8sVersion string
	// ProxyVersion is the kube-proxy version StartKubeProxy uses; default ProxyVersions()[0].
	ProxyVersion string
	// APIServerArgs are appended to kube-apiserver's flags.
	APIServerArgs []string
	// Kubelets makes the nodes run Pods: every node namespace gets its own containerd and
	// kubelet (registered with a client certificate of its own), and kube-controller-manager
	// and kube-scheduler run beside the API server, so that Deployments make Pods and the
	// EndpointSlice controller their endpoints. Pods run the lab's images (PauseImage,
	// LabnetImage), imported into each containerd. Needs the Debian packages containerd, runc
	// and containernetworking-plugins.
	Kubelets bool
}

// Node is one node namespace.
type Node struct {
	Name    string // Kubernetes node name: node1, node2, ...
	Index   int    // 1-based
	IP      string // InternalIP, 192.0.2.(9+Index)
	PodCIDR string // 10.244.<Index>.0/24
	NetNS   string // network namespace name (for ip netns exec)

	nextPodIP    int
	nextVeth     int
	proxy        *proc
	proxyMinSync time.Duration
	runtime      *nodeRuntime // containerd and kubelet (Options.Kubelets)
	proxyPod     bool         // kube-proxy runs as a Pod (DeployKubeProxy)
}

// Lab is a running control plane with node namespaces. Its methods are safe for concurrent
// use. All namespaces and processes are removed by t.Cleanup, on SIGINT/SIGTERM, and (for a
// crashed run) by CleanupStale on the next Start.
type Lab struct {
	// Dir is the lab's scratch directory (certificates, logs, etcd data).
	Dir string
	// Kubeconfig is an admin kubeconfig (token in system:masters). Its server,
	// https://192.0.2.2:6443, is reachable from every lab namespace, not from the starting
	// namespace: use it with Exec (e.g. `svctrace --kubeconfig`) or through Lab's API methods.
	Kubeconfig string
	// ProxyKubeconfig is the kubeconfig kube-proxy runs with (user system:kube-proxy).
	ProxyKubeconfig string
	// APIServer is the API server URL.
	APIServer string
	// K8sVersion is the control-plane version; ProxyVersion the default kube-proxy version.
	K8sVersion, ProxyVersion string

	t         TB
	prefix    string
	netNS     string // bridge namespace
	cpNS      string // control-plane namespace
	labnet    string
	pki       *pki
	api       *apiClient
	startTime time.Time
	kubelets  bool // Options.Kubelets

	mu         sync.Mutex
	nodes      []*Node
	pods       map[string]*Pod // by "namespace/name"
	namespaces []string        // every namespace created, in creation order
	procs      []*proc
	// apiProc is the running kube-apiserver, apiArgs its command line.
	apiProc    *proc
	apiArgs    []string
	lastChange time.Time
	createdNS  map[string]bool // Kubernetes namespaces ensured by Apply
	discovery  map[string][]apiResource

	closed       bool // set by teardown; no namespace or process is created after it
	teardownOnce sync.Once
	stopSignals  func()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// Start builds (if needed) and starts the lab: a bridge namespace, a control-plane namespace
// with etcd and kube-apiserver, opts.Nodes node namespaces with Node objects in the API, and
// routes between the nodes' pod CIDRs. It skips the test when not root (fails under CI=true).
// Everything is torn down when the test ends.
func Start(t TB, opts Options) *Lab {
	t.Helper()
	requireRoot(t)
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.Nodes > 200 {
		t.Fatalf("lab: at most 200 nodes")
	}
	if opts.K8sVersion == "" {
		opts.K8sVersion = K8sVersion()
	}
	if opts.ProxyVersion == "" {
		opts.ProxyVersion = ProxyVersions()[0]
	}
	if err := CleanupStale(); err != nil {
		t.Logf("lab: cleaning up stale namespaces: %v", err)
	}
	cpBin := EnsureBinaries(t, opts.K8sVersion, "kube-apiserver", "etcd")
	EnsureBinaries(t, opts.ProxyVersion, "kube-proxy")
	if opts.Kubelets {
		requireClusterTools(t)
		EnsureBinaries(t, opts.K8sVersion, clusterComponents...)
	}
	l := startNetwork(t, opts)
	l.kubelets = opts.Kubelets
	if err := l.startControlPlane(cpBin, opts.APIServerArgs); err != nil {
		t.Fatalf("lab: control plane: %v", err)
	}
	for _, n := range l.nodes {
		if err := l.registerNode(n); err != nil {
			t.Fatalf("lab: node %s: %v", n.Name, err)
		}
	}
	if opts.Kubelets {
		if err := l.startControllers(cpBin); err != nil {
			t.Fatalf("lab: controllers: %v", err)
		}
		if err := l.startNodes(cpBin); err != nil {
			t.Fatalf("lab: %v", err)
		}
	}
	t.Logf("lab: %s up with %d nodes in %v (namespaces %s*, dir %s)", l.K8sVersion, len(l.nodes),
		time.Since(l.startTime).Round(time.Millisecond), l.prefix, l.Dir)
	return l
}

// startNetwork creates the namespaces, bridge, node routes and the labnet helper, without a
// control plane (pods then need NoAPIObject).
func startNetwork(t TB, opts Options) *Lab {
	t.Helper()
	rnd := make([]byte, 3)
	rand.Read(rnd)
	l := &Lab{
		Dir:          t.TempDir(),
		K8sVersion:   opts.K8sVersion,
		ProxyVersion: opts.ProxyVersion,
		APIServer:    fmt.Sprintf("https://%s:%d", APIServerIP, APIPort),
		t:            t,
		prefix:       fmt.Sprintf("%s%d-%s-", NamespacePrefix, os.Getpid(), hex.EncodeToString(rnd)),
		pods:         map[string]*Pod{},
		createdNS:    map[string]bool{},
		discovery:    map[string][]apiResource{},
		startTime:    time.Now(),
	}
	l.netNS = l.prefix + "net"
	l.cpNS = l.prefix + "cp"
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(l.teardown)
	l.stopSignals = l.teardownOnSignal()

	var err error
	if l.labnet, err = buildLabnet(l.Dir); err != nil {
		t.Fatalf("lab: %v", err)
	}
	if err := l.setupNetwork(opts.Nodes); err != nil {
		t.Fatalf("lab: network: %v", err)
	}
	return l
}

// Error is the type of the lab's constant errors.
type Error string

func (e Error) Error() string { return string(e) }

const errTornDown = Error("lab: torn down")

// Nodes returns the nodes in index order.
func (l *Lab) Nodes() []*Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.nodes)
}

// Node returns the node with the given name, or nil.
func (l *Lab) Node(name string) *Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodeLocked(name)
}

func (l *Lab) nodeLocked(name string) *Node {
	for _, n := range l.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// NetNS resolves where to a network namespace name usable with `ip netns exec`: a node name
// (node1), a pod ("name" or "namespace/name"), "cp" (control plane) or "net" (bridge).
func (l *Lab) NetNS(where string) (string, error) {
	switch where {
	case "cp", "control":
		return l.cpNS, nil
	case "net":
		return l.netNS, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.nodeLocked(where); n != nil {
		return n.NetNS, nil
	}
	if p := l.podLocked(where); p != nil {
		return p.NetNS, nil
	}
	return "", fmt.Errorf("lab: no node or pod %q", where)
}

// Exec runs a command inside a lab namespace (see NetNS for where) and returns its stdout;
// the error carries stderr. Example: l.Exec("node1", "iptables-save", "-t", "nat").
func (l *Lab) Exec(where string, args ...string) (string, error) {
	return l.ExecContext(context.Background(), where, args...)
}

// ExecContext is Exec with a context.
func (l *Lab) ExecContext(ctx context.Context, where string, args ...string) (string, error) {
	ns, err := l.NetNS(where)
	if err != nil {
		return "", err
	}
	if len(args) == 0 {
		return "", errors.New("lab: Exec: no command")
	}
	return nsExec(ctx, ns, args...)
}

// Labnet is the path of the labnet helper binary built for this lab.
func (l *Lab) Labnet() string { return l.labnet }
