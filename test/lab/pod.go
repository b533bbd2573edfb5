//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Listener is a server port a pod answers on (with its name).
type Listener struct {
	Proto string // "TCP", "UDP" or "SCTP"
	Port  int
	Name  string // optional container port name (for named targetPorts)
	// Hold (TCP): connections stay open until the client closes them.
	Hold bool
}

// TCP, UDP and SCTP make listeners.
func TCP(port int) Listener  { return Listener{Proto: "TCP", Port: port} }
func UDP(port int) Listener  { return Listener{Proto: "UDP", Port: port} }
func SCTP(port int) Listener { return Listener{Proto: "SCTP", Port: port} }

// ErrNoSCTP is returned for SCTP listeners and dials when the kernel has no SCTP sockets
// (CONFIG_IP_SCTP). kube-proxy's SCTP rules still work: only endpoints cannot exist.
const ErrNoSCTP = Error("lab: kernel has no SCTP socket support (CONFIG_IP_SCTP unset)")

// SCTPSupported reports whether SCTP sockets can be created on this kernel.
func SCTPSupported() bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
}

// PodSpec describes a pod for AddPodSpec.
type PodSpec struct {
	Node      string
	Namespace string // default "default"
	Name      string
	IP        string // default: the next free address of the node's pod CIDR
	Labels    map[string]string
	Listeners []Listener
	// NoAPIObject skips creating the Pod object (a bare network client).
	NoAPIObject bool
}

// Pod is a pod network namespace with a veth into its node, plus (normally) a Pod object.
type Pod struct {
	Namespace, Name string
	Node            string
	IP              string
	NetNS           string
	Listeners       []Listener

	server *proc
}

// AddPod creates pod name ("name" or "namespace/name") on node with address ip (empty: next
// free in the node's pod CIDR) and listeners answering with the pod name, and a matching
// Running/Ready Pod object (labels app=<name>).
func (l *Lab) AddPod(node, name, ip string, listeners ...Listener) (*Pod, error) {
	ns, n := "default", name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		ns, n = name[:i], name[i+1:]
	}
	return l.AddPodSpec(PodSpec{Node: node, Namespace: ns, Name: n, IP: ip,
		Labels: map[string]string{"app": n}, Listeners: listeners})
}

// AddPodSpec creates a pod from spec (see AddPod).
func (l *Lab) AddPodSpec(spec PodSpec) (*Pod, error) {
	if spec.Namespace == "" {
		spec.Namespace = "default"
	}
	key := spec.Namespace + "/" + spec.Name
	for _, ls := range spec.Listeners {
		if strings.EqualFold(ls.Proto, "SCTP") && !SCTPSupported() {
			return nil, ErrNoSCTP
		}
	}
	l.mu.Lock()
	node := l.nodeLocked(spec.Node)
	if node == nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("lab: no node %q", spec.Node)
	}
	if _, dup := l.pods[key]; dup {
		l.mu.Unlock()
		return nil, fmt.Errorf("lab: pod %s exists", key)
	}
	prefix := netip.MustParsePrefix(node.PodCIDR)
	if spec.IP == "" {
		if node.nextPodIP > 254 {
			l.mu.Unlock()
			return nil, fmt.Errorf("lab: node %s: pod CIDR exhausted", node.Name)
		}
		a := prefix.Addr().As4()
		a[3] = byte(node.nextPodIP)
		node.nextPodIP++
		spec.IP = netip.AddrFrom4(a).String()
	}
	node.nextVeth++
	veth := "lv" + strconv.Itoa(node.nextVeth)
	pod := &Pod{Namespace: spec.Namespace, Name: spec.Name, Node: node.Name, IP: spec.IP,
		Listeners: spec.Listeners}
	l.pods[key] = pod
	l.mu.Unlock()

	ip, err := netip.ParseAddr(spec.IP)
	if err != nil || !ip.Is4() {
		return nil, fmt.Errorf("lab: pod %s: bad IPv4 %q", key, spec.IP)
	}
	if !prefix.Contains(ip) {
		return nil, fmt.Errorf("lab: pod %s: %s is outside %s's pod CIDR %s", key, ip, node.Name, node.PodCIDR)
	}
	if pod.NetNS, err = l.newNetns("pod-" + spec.Namespace + "." + spec.Name); err != nil {
		return nil, err
	}
	if err := l.wirePod(node, pod, veth); err != nil {
		return nil, fmt.Errorf("lab: pod %s: %w", key, err)
	}
	if len(spec.Listeners) > 0 {
		if err := l.startServer(pod); err != nil {
			return nil, fmt.Errorf("lab: pod %s: %w", key, err)
		}
	}
	if !spec.NoAPIObject {
		if err := l.applyPodObject(node, pod, spec.Labels); err != nil {
			return nil, fmt.Errorf("lab: pod %s: %w", key, err)
		}
	}
	return pod, nil
}

// wirePod: veth eth0 (ip/32) in the pod, <veth> in the node; the pod's default route goes to
// 169.254.1.1 with a static neighbour entry for the node side's MAC; the node routes ip/32 to
// the veth (the layout of routed CNIs such as Calico).
func (l *Lab) wirePod(node *Node, pod *Pod, veth string) error {
	if err := ipn(node.NetNS, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pod.NetNS); err != nil {
		return err
	}
	if err := ipn(node.NetNS, "link", "set", veth, "up"); err != nil {
		return err
	}
	mac, err := linkMAC(node.NetNS, veth)
	if err != nil {
		return err
	}
	steps := [][]string{
		{pod.NetNS, "addr", "add", pod.IP + "/32", "dev", "eth0"},
		{pod.NetNS, "link", "set", "eth0", "up"},
		{pod.NetNS, "route", "add", podGatewayIP, "dev", "eth0", "scope", "link"},
		{pod.NetNS, "neigh", "replace", podGatewayIP, "lladdr", mac, "dev", "eth0", "nud", "permanent"},
		{pod.NetNS, "route", "add", "default", "via", podGatewayIP, "dev", "eth0", "src", pod.IP},
		{node.NetNS, "route", "add", pod.IP + "/32", "dev", veth, "scope", "link"},
	}
	for _, s := range steps {
		if err := ipn(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func linkMAC(ns, dev string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := run(ctx, "ip", "-n", ns, "-j", "link", "show", "dev", dev)
	if err != nil {
		return "", err
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) == 0 || links[0].Address == "" {
		return "", fmt.Errorf("no MAC for %s in %s: %v", dev, ns, err)
	}
	return links[0].Address, nil
}

func (l *Lab) startServer(pod *Pod) error {
	ready := filepath.Join(l.Dir, "ready-"+pod.Namespace+"."+pod.Name)
	os.Remove(ready)
	args := []string{l.labnet, "serve", "--name", pod.Name, "--ready-file", ready}
	for _, ls := range pod.Listeners {
		switch strings.ToUpper(ls.Proto) {
		case "TCP":
			flag := "--tcp"
			if ls.Hold {
				flag = "--tcp-hold"
			}
			args = append(args, flag, strconv.Itoa(ls.Port))
		case "UDP":
			args = append(args, "--udp", strconv.Itoa(ls.Port))
		case "SCTP":
			args = append(args, "--sctp", strconv.Itoa(ls.Port))
		default:
			return fmt.Errorf("unknown protocol %q", ls.Proto)
		}
	}
	p, err := l.startProc("labnet-"+pod.Namespace+"."+pod.Name, pod.NetNS, args...)
	if err != nil {
		return err
	}
	pod.server = p
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			return nil
		}
		if p.exited() {
			b, _ := os.ReadFile(p.log)
			return fmt.Errorf("labnet serve exited: %v: %s", p.err, lastLines(string(b), 5))
		}
		if time.Now().After(deadline) {
			return errors.New("labnet serve not ready after 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *Lab) applyPodObject(node *Node, pod *Pod, labels map[string]string) error {
	var ports []any
	for _, ls := range pod.Listeners {
		p := map[string]any{"containerPort": ls.Port, "protocol": strings.ToUpper(ls.Proto)}
		if ls.Name != "" {
			p["name"] = ls.Name
		}
		ports = append(ports, p)
	}
	lbl := map[string]any{}
	for k, v := range labels {
		lbl[k] = v
	}
	now := time.Now().UTC().Format(time.RFC3339)
	container := map[string]any{"name": "app", "image": "svctrace.invalid/labnet:lab"}
	if len(ports) > 0 {
		container["ports"] = ports
	}
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": pod.Name, "namespace": pod.Namespace, "labels": lbl},
		"spec": map[string]any{
			"nodeName":                      node.Name,
			"containers":                    []any{container},
			"terminationGracePeriodSeconds": 0,
		},
		"status": map[string]any{
			"phase":     "Running",
			"hostIP":    node.IP,
			"hostIPs":   []any{map[string]any{"ip": node.IP}},
			"podIP":     pod.IP,
			"podIPs":    []any{map[string]any{"ip": pod.IP}},
			"startTime": now,
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": now},
				map[string]any{"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
				map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
			},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return l.applyObject(ctx, obj)
}

// Pod returns a pod by "name" (namespace default) or "namespace/name", or nil.
func (l *Lab) Pod(name string) *Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.podLocked(name)
}

func (l *Lab) podLocked(name string) *Pod {
	if p, ok := l.pods[name]; ok {
		return p
	}
	if p, ok := l.pods["default/"+name]; ok {
		return p
	}
	return nil
}

// RemovePod stops the pod's listeners, deletes its namespace (and with it the veth and the
// node's route) and its Pod object.
func (l *Lab) RemovePod(name string) error {
	l.mu.Lock()
	p := l.podLocked(name)
	if p != nil {
		delete(l.pods, p.Namespace+"/"+p.Name)
	}
	l.mu.Unlock()
	if p == nil {
		return fmt.Errorf("lab: no pod %q", name)
	}
	var errs []error
	if p.server != nil {
		errs = append(errs, p.server.stop(5*time.Second))
		l.removeProc(p.server)
	}
	errs = append(errs, delNetns(p.NetNS), l.Delete("Pod", p.Namespace, p.Name))
	return errors.Join(errs...)
}

// DialResult counts which backends answered.
type DialResult struct {
	Hits   map[string]int // backend name -> answers
	Errors []string       // one per failed attempt
}

// Dial runs `labnet dial proto addr --count count` inside from (a pod or node, see NetNS) and
// counts the backends that answered. err is non-nil only when labnet could not run at all or
// the kernel lacks SCTP; failed attempts are in DialResult.Errors.
func (l *Lab) Dial(from, proto, addr string, count int, extraArgs ...string) (DialResult, error) {
	ns, err := l.NetNS(from)
	if err != nil {
		return DialResult{Hits: map[string]int{}}, err
	}
	args := append([]string{l.labnet, "dial", strings.ToLower(proto), addr, "--count", strconv.Itoa(count)}, extraArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(count)*3*time.Second+10*time.Second)
	defer cancel()
	out, err := nsExec(ctx, ns, args...)
	return parseDial(out, err)
}

// DialFromPod is Dial from a Pod the kubelets run (Options.Kubelets), whose image holds labnet
// as /labnet (LabnetImage): `kubectl exec` runs the dial in it.
func (l *Lab) DialFromPod(namespace, pod, proto, addr string, count int, extraArgs ...string) (DialResult, error) {
	args := append([]string{"-n", namespace, "exec", pod, "--", "/labnet", "dial", strings.ToLower(proto), addr,
		"--count", strconv.Itoa(count)}, extraArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(count)*3*time.Second+20*time.Second)
	defer cancel()
	out, err := l.Kubectl(ctx, args...)
	return parseDial(out, err)
}

// parseDial counts labnet dial's answers: a backend's name per line, or ERROR and a reason.
func parseDial(out string, err error) (DialResult, error) {
	res := DialResult{Hits: map[string]int{}}
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "ERROR "):
			res.Errors = append(res.Errors, strings.TrimPrefix(line, "ERROR "))
		default:
			res.Hits[line]++
		}
	}
	if err != nil && strings.Contains(err.Error(), "no SCTP socket support") {
		return res, ErrNoSCTP
	}
	if err != nil && len(res.Hits) == 0 && len(res.Errors) == 0 {
		return res, err
	}
	return res, nil
}

// String renders hits as "a=3 b=4 errors=1".
func (r DialResult) String() string {
	var b strings.Builder
	names := make([]string, 0, len(r.Hits))
	for n := range r.Hits {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%d ", n, r.Hits[n])
	}
	fmt.Fprintf(&b, "errors=%d", len(r.Errors))
	return b.String()
}
