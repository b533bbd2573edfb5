//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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

// startProc starts argv inside namespace ns (ip netns exec execs it, so the PID is the
// program's), logging to Dir/<name>.log. The process dies with the test process (Pdeathsig).
func (l *Lab) startProc(name, ns string, argv ...string) (*proc, error) {
	return l.startProcWith(name, append([]string{"ip", "netns", "exec", ns}, argv...))
}

// startHostMountsProc starts argv in namespace ns like startProc, but in the host's mount
// namespace (nsenter --net): `ip netns exec` gives each program a mount namespace of its own,
// and containerd and the kubelet must see each other's mounts (volumes, sandboxes).
func (l *Lab) startHostMountsProc(name, ns string, argv ...string) (*proc, error) {
	return l.startProcWith(name, append([]string{"nsenter", "--net=" + filepath.Join(netnsDir, ns), "--"}, argv...))
}

func (l *Lab) startProcWith(name string, argv []string) (*proc, error) {
	logPath := filepath.Join(l.Dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprintf(f, "### %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
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
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saKeyFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--allow-privileged=true",
		"--profiling=false",
	}
	if l.kubelets {
		more, err := l.clusterAPIServerArgs()
		if err != nil {
			return err
		}
		args = append(args, more...)
	} else {
		// No controller-manager creates ServiceAccounts; pods are created without one.
		args = append(args, "--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount")
	}
	args = append(args, extra...)
	l.apiArgs = args
	apiserver, err := l.startProc("kube-apiserver", l.cpNS, args...)
	if err != nil {
		return err
	}
	l.apiProc = apiserver
	l.api, err = newAPIClient(l.APIServer, filepath.Join(netnsDir, l.cpNS), p.caPEM, p.adminToken)
	if err != nil {
		return err
	}
	return l.waitAPIServer(etcd, apiserver)
}

// StopAPIServer stops kube-apiserver (SIGTERM by PID, SIGKILL after 10 s), as an outage
// would; etcd and everything else go on. StartAPIServer starts it again.
func (l *Lab) StopAPIServer() error {
	l.mu.Lock()
	p := l.apiProc
	l.apiProc = nil
	l.mu.Unlock()
	if p == nil {
		return errors.New("lab: kube-apiserver is not running")
	}
	err := p.stop(10 * time.Second)
	l.removeProc(p)
	return err
}

// StartAPIServer starts kube-apiserver again with the arguments it first ran with, and waits
// until it is ready.
func (l *Lab) StartAPIServer() error {
	l.mu.Lock()
	running := l.apiProc != nil
	args := l.apiArgs
	l.mu.Unlock()
	if running {
		return errors.New("lab: kube-apiserver is running")
	}
	p, err := l.startProc("kube-apiserver", l.cpNS, args...)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.apiProc = p
	l.mu.Unlock()
	return l.waitAPIServer(p)
}

// waitAPIServer waits until kube-apiserver answers /readyz, failing early if one of procs
// exits.
func (l *Lab) waitAPIServer(procs ...*proc) error {
	apiserver := procs[len(procs)-1]
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, pr := range procs {
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
