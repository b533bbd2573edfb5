//go:build linux

// Command labctl keeps a lab cluster up for people, outside go test: hack/lab.sh runs it.
//
//	labctl serve -state DIR [-proxy-mode iptables|nftables] [-version v1.36.3] [-nodes 2] [-api 127.0.0.1:6443]
//
// serve starts the lab with nodes that run Pods and kube-proxy as a DaemonSet, forwards the
// API address on this host into the lab, writes DIR/state.json (and DIR/kubeconfig) once the
// nodes are Ready, and keeps the lab until SIGTERM or SIGINT, when it tears it all down.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/svctrace/svctrace/test/lab"
)

// State is what hack/lab.sh reads of a running lab (DIR/state.json).
type State struct {
	PID        int    `json:"pid"`
	Ready      bool   `json:"ready"`
	Error      string `json:"error,omitempty"`
	Prefix     string `json:"prefix,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// LabKubeconfig works inside the lab's namespaces (the API server at 192.0.2.2).
	LabKubeconfig string   `json:"labKubeconfig,omitempty"`
	API           string   `json:"api,omitempty"`
	ProxyMode     string   `json:"proxyMode,omitempty"`
	Version       string   `json:"version,omitempty"`
	Nodes         []Node   `json:"nodes,omitempty"`
	ControlNS     string   `json:"controlPlaneNetns,omitempty"`
	Logs          string   `json:"logs,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// Node is one node of the lab.
type Node struct {
	Name  string `json:"name"`
	IP    string `json:"ip"`
	NetNS string `json:"netns"`
	// Containerd is the address of the node's containerd.
	Containerd string `json:"containerd"`
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: labctl serve -state DIR [-proxy-mode iptables|nftables] [-version v1.36.3] [-nodes 2] [-api 127.0.0.1:6443]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	stateDir := fs.String("state", "", "directory for state.json, the kubeconfig and the lab's files")
	mode := fs.String("proxy-mode", "iptables", "kube-proxy's mode: iptables or nftables")
	version := fs.String("version", lab.K8sVersion(), "Kubernetes version of the control plane, the kubelets and kube-proxy")
	nodes := fs.Int("nodes", 2, "number of nodes")
	api := fs.String("api", "127.0.0.1:6443", "host address forwarded to the lab's API server")
	fs.Parse(os.Args[2:])
	if *stateDir == "" || (*mode != "iptables" && *mode != "nftables") {
		fmt.Fprintln(os.Stderr, "labctl serve: -state DIR is required, and -proxy-mode is iptables or nftables")
		os.Exit(2)
	}
	if !strings.HasPrefix(*version, "v") {
		*version = "v" + *version
	}
	r := &runner{dir: *stateDir}
	st := &State{PID: os.Getpid(), ProxyMode: *mode, Version: *version}
	r.onFatal = func(msg string) {
		st.Error = msg
		writeState(*stateDir, st)
	}
	writeState(*stateDir, st)
	ln, err := net.Listen("tcp", *api)
	if err != nil {
		r.Fatalf("listening on %s for the API server: %v", *api, err)
	}
	l := lab.Start(r, lab.Options{Nodes: *nodes, Kubelets: true, K8sVersion: *version, ProxyVersion: *version})
	if err := l.DeployKubeProxy(*mode, ""); err != nil {
		r.Fatalf("%v", err)
	}
	go l.ServeAPIProxy(ln)
	kc := filepath.Join(*stateDir, "kubeconfig")
	if err := os.WriteFile(kc, l.HostKubeconfig(ln.Addr().String()), 0o600); err != nil {
		r.Fatalf("%v", err)
	}
	st.Ready, st.Prefix, st.Kubeconfig, st.API, st.Logs = true, l.Prefix(), kc, ln.Addr().String(), l.Dir
	st.ControlNS, st.LabKubeconfig = l.ControlPlaneNetNS(), l.Kubeconfig
	for _, n := range l.Nodes() {
		st.Nodes = append(st.Nodes, Node{Name: n.Name, IP: n.IP, NetNS: n.NetNS, Containerd: n.ContainerdSocket()})
	}
	writeState(*stateDir, st)
	// The lab tears itself down on SIGTERM and SIGINT and then ends the process.
	select {}
}

func writeState(dir string, st *State) {
	b, _ := json.MarshalIndent(st, "", "  ")
	tmp := filepath.Join(dir, "state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		os.Rename(tmp, filepath.Join(dir, "state.json"))
	}
}

// runner stands in for a test: it logs to stderr, keeps the lab's directories under the state
// directory, and on a fatal error tears down what was started and exits 1.
type runner struct {
	dir      string
	mu       sync.Mutex
	cleanups []func()
	failed   bool
	onFatal  func(string)
}

func (r *runner) Helper() {}

func (r *runner) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (r *runner) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, "labctl:", msg)
	r.mu.Lock()
	r.failed = true
	cleanups := slices.Clone(r.cleanups)
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
	if r.onFatal != nil {
		r.onFatal(msg)
	}
	os.Exit(1)
}

func (r *runner) Skipf(format string, args ...any) { r.Fatalf(format, args...) }

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *runner) TempDir() string {
	d, err := os.MkdirTemp(r.dir, "lab-")
	if err != nil {
		r.Fatalf("%v", err)
	}
	return d
}

func (r *runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
