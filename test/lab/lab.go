//go:build linux

package lab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
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

	t         testing.TB
	prefix    string
	netNS     string // bridge namespace
	cpNS      string // control-plane namespace
	labnet    string
	pki       *pki
	api       *apiClient
	startTime time.Time

	mu         sync.Mutex
	nodes      []*Node
	pods       map[string]*Pod // by "namespace/name"
	namespaces []string        // every namespace created, in creation order
	procs      []*proc
	lastChange time.Time
	createdNS  map[string]bool // Kubernetes namespaces ensured by Apply
	discovery  map[string][]apiResource

	closed       bool // set by teardown; no namespace or process is created after it
	teardownOnce sync.Once
	stopSignals  func()
}

// proc is a process the lab started.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process (by PID), then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pid := p.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pid)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// Start builds (if needed) and starts the lab: a bridge namespace, a control-plane namespace
// with etcd and kube-apiserver, opts.Nodes node namespaces with Node objects in the API, and
// routes between the nodes' pod CIDRs. It skips the test when not root (fails under CI=true).
// Everything is torn down when the test ends.
func Start(t testing.TB, opts Options) *Lab {
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
	l := startNetwork(t, opts)
	if err := l.startControlPlane(cpBin, opts.APIServerArgs); err != nil {
		t.Fatalf("lab: control plane: %v", err)
	}
	for _, n := range l.nodes {
		if err := l.registerNode(n); err != nil {
			t.Fatalf("lab: node %s: %v", n.Name, err)
		}
	}
	t.Logf("lab: %s up with %d nodes in %v (namespaces %s*, dir %s)", l.K8sVersion, len(l.nodes),
		time.Since(l.startTime).Round(time.Millisecond), l.prefix, l.Dir)
	return l
}

// startNetwork creates the namespaces, bridge, node routes and the labnet helper, without a
// control plane (pods then need NoAPIObject).
func startNetwork(t testing.TB, opts Options) *Lab {
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

// teardownOnSignal tears the lab down on SIGINT/SIGTERM/SIGHUP and re-raises the signal.
func (l *Lab) teardownOnSignal() func() {
	sigc := make(chan os.Signal, 1)
	done := make(chan struct{})
	// Signals the process ignores (e.g. SIGINT in a background job) stay ignored.
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigc, s)
		}
	}
	go func() {
		select {
		case s := <-sigc:
			fmt.Fprintf(os.Stderr, "lab: %v: tearing down %s*\n", s, l.prefix)
			l.teardownNow()
			fmt.Fprintf(os.Stderr, "lab: logs are in %s\n", l.Dir)
			// Re-raise. Other labs in this process still subscribed absorb it while they
			// tear down; the last one's re-raise meets the default action and ends the process.
			signal.Stop(sigc)
			if sig, ok := s.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), sig)
			}
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
	}
}

func (l *Lab) teardown() {
	if l.stopSignals != nil {
		l.stopSignals()
	}
	if l.t.Failed() {
		l.dumpLogs()
	}
	l.teardownNow()
}

// teardownNow stops every process the lab started (by PID, kube-proxies and listeners first)
// and deletes every namespace it created. Idempotent.
func (l *Lab) teardownNow() {
	l.teardownOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		procs := slices.Clone(l.procs)
		namespaces := slices.Clone(l.namespaces)
		l.mu.Unlock()
		var errs []error
		// Reverse start order: kube-proxies and listeners, then kube-apiserver, then etcd.
		for _, p := range slices.Backward(procs) {
			if err := p.stop(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		for _, ns := range slices.Backward(namespaces) {
			if err := delNetns(ns); err != nil {
				errs = append(errs, err)
			}
		}
		if l.api != nil {
			l.api.close()
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(os.Stderr, "lab: teardown: %v\n", err)
		}
	})
}

// dumpLogs logs the tail of every process log (on failure).
func (l *Lab) dumpLogs() {
	l.mu.Lock()
	procs := slices.Clone(l.procs)
	l.mu.Unlock()
	for _, p := range procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		l.t.Logf("lab: --- last lines of %s (%s) ---\n%s", p.name, p.log, lastLines(string(b), 25))
	}
}

// Error is the type of the lab's constant errors.
type Error string

func (e Error) Error() string { return string(e) }

const errTornDown = Error("lab: torn down")

// newNetns creates a namespace and records it for teardown. The lock is held while creating,
// so that a concurrent teardown (signal) either sees the namespace or prevents it.
func (l *Lab) newNetns(role string) (string, error) {
	name := l.prefix + role
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", errTornDown
	}
	l.namespaces = append(l.namespaces, name)
	return name, addNetns(name)
}

func (l *Lab) setupNetwork(nodes int) error {
	if _, err := l.newNetns("net"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "add", "br0", "type", "bridge"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "addr", "add", BridgeIP+"/24", "dev", "br0"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "set", "br0", "up"); err != nil {
		return err
	}
	if _, err := l.newNetns("cp"); err != nil {
		return err
	}
	if err := l.attach(l.cpNS, "cp", APIServerIP); err != nil {
		return err
	}
	for i := 1; i <= nodes; i++ {
		n := &Node{
			Name:      "node" + strconv.Itoa(i),
			Index:     i,
			IP:        fmt.Sprintf("192.0.2.%d", firstNodeIP+i-1),
			PodCIDR:   fmt.Sprintf("10.244.%d.0/24", i),
			nextPodIP: 10,
		}
		var err error
		if n.NetNS, err = l.newNetns(n.Name); err != nil {
			return err
		}
		if err := l.attach(n.NetNS, "n"+strconv.Itoa(i), n.IP); err != nil {
			return err
		}
		if err := sysctls(n.NetNS,
			"net.ipv4.ip_forward=1",
			"net.ipv4.conf.all.route_localnet=1",
			"net.ipv4.conf.all.rp_filter=0",
			"net.ipv4.conf.default.rp_filter=0",
		); err != nil {
			return err
		}
		if err := ipn(n.NetNS, "route", "add", "default", "via", BridgeIP); err != nil {
			return err
		}
		l.nodes = append(l.nodes, n)
	}
	// Every node routes the other nodes' pod CIDRs to them (what a CNI's host routes do).
	for _, n := range l.nodes {
		for _, o := range l.nodes {
			if o != n {
				if err := ipn(n.NetNS, "route", "add", o.PodCIDR, "via", o.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// attach connects namespace ns to the bridge with a veth pair: eth0 (ip/24) in ns, port in net.
func (l *Lab) attach(ns, port, ip string) error {
	if err := ipn(l.netNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "set", port, "master", "br0", "up"); err != nil {
		return err
	}
	if err := ipn(ns, "addr", "add", ip+"/24", "dev", "eth0"); err != nil {
		return err
	}
	return ipn(ns, "link", "set", "eth0", "up")
}

// startProc starts argv inside namespace ns (ip netns exec execs it, so the PID is the
// program's), logging to Dir/<name>.log. The process dies with the test process (Pdeathsig).
func (l *Lab) startProc(name, ns string, argv ...string) (*proc, error) {
	logPath := filepath.Join(l.Dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprintf(f, "### %s: ip netns exec %s %s\n", time.Now().Format(time.RFC3339Nano), ns, strings.Join(argv, " "))
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Dir = l.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errTornDown
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	l.procs = append(l.procs, p)
	return p, nil
}

func (l *Lab) removeProc(p *proc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.procs = slices.DeleteFunc(l.procs, func(q *proc) bool { return q == p })
}

func (l *Lab) startControlPlane(bin string, extra []string) error {
	p, err := makePKI(l.Dir, []net.IP{net.ParseIP(APIServerIP), net.ParseIP("10.96.0.1")})
	if err != nil {
		return err
	}
	l.pki = p
	l.Kubeconfig = filepath.Join(l.Dir, "admin.kubeconfig")
	l.ProxyKubeconfig = filepath.Join(l.Dir, "kube-proxy.kubeconfig")
	if err := os.WriteFile(l.Kubeconfig, kubeconfig(l.APIServer, p.caPEM, "admin", p.adminToken), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(l.ProxyKubeconfig, kubeconfig(l.APIServer, p.caPEM, "kube-proxy", p.proxyToken), 0o600); err != nil {
		return err
	}
	etcd, err := l.startProc("etcd", l.cpNS, filepath.Join(bin, "etcd"),
		"--name=lab",
		"--data-dir="+filepath.Join(l.Dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379",
		"--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380",
		"--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=lab=http://127.0.0.1:2380",
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	certDir := filepath.Join(l.Dir, "apiserver-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	args := []string{filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0",
		"--advertise-address=" + APIServerIP,
		"--secure-port=" + strconv.Itoa(APIPort),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.certFile,
		"--tls-private-key-file=" + p.keyFile,
		"--token-auth-file=" + p.tokensFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saKeyFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		// No controller-manager creates ServiceAccounts; pods are created without one.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--profiling=false",
	}
	args = append(args, extra...)
	apiserver, err := l.startProc("kube-apiserver", l.cpNS, args...)
	if err != nil {
		return err
	}
	l.api, err = newAPIClient(l.APIServer, filepath.Join(netnsDir, l.cpNS), p.caPEM, p.adminToken)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, pr := range []*proc{etcd, apiserver} {
			if pr.exited() {
				b, _ := os.ReadFile(pr.log)
				return fmt.Errorf("%s exited: %v\n%s", pr.name, pr.err, lastLines(string(b), 30))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := l.api.do(ctx, "GET", "/readyz", "", nil)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(apiserver.log)
			return fmt.Errorf("kube-apiserver not ready after 90s: %v\n%s", err, lastLines(string(b), 30))
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil
}

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
