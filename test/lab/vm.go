//go:build linux

package lab

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// VM is a node of the lab that runs in a small virtual machine: Debian's
// kernel, which has IPVS (the host's has none), booted by qemu with an
// initramfs holding busybox, the netfilter and IPVS modules, iptables,
// ipset, ipvsadm and kube-proxy. It reaches the lab's API server through
// qemu's user-mode network (the host's loopback is 10.0.2.2 there) and
// nothing else; the lab stops it by PID with the rest.
type VM struct {
	Name string
	// IP is the VM's address, its Node's InternalIP.
	IP string
	// Console is the file the VM's console is written to.
	Console string
	// Accel is the accelerator it runs with: kvm, or tcg (software
	// emulation) where KVM is not there or failed.
	Accel string
	// Failed says why an accelerator tried first failed, and when.
	Failed []string

	mu   sync.Mutex
	ctl  net.Conn
	rd   *bufio.Reader
	proc *proc
}

// VM addresses in qemu's user-mode network.
const (
	vmIP   = "10.0.2.15"
	vmHost = "10.0.2.2"
)

// vmInit is the VM's first process: it loads the modules, brings the
// network up, and serves commands on its virtio control port.
const vmInit = `#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
@INSMODS@
hostname @NAME@
ip link set lo up
ip link set eth0 up
ip addr add ` + vmIP + `/24 dev eth0
ip route add default via ` + vmHost + `
echo svctrace-vm-ready
exec /bin/sh /ctl.sh
`

// vmCtl runs each line read on the control port as a shell command, and
// answers with its output and a closing line that carries its status.
const vmCtl = `port=$(ls /dev/vport*p1 | head -1)
exec 3<>"$port"
echo "<<<svctrace-vm-end 0>>>" >&3
while IFS= read -r line <&3; do
	out=$(sh -c "$line" 2>&1)
	rc=$?
	printf '%s\n<<<svctrace-vm-end %d>>>\n' "$out" "$rc" >&3
done
`

// VMOptions are what a VM holds beyond kube-proxy.
type VMOptions struct {
	// Files are put in the VM's root: path (relative) to content, made
	// executable.
	Files map[string][]byte
}

// VMAdminKubeconfig is where a VM holds an admin kubeconfig of the lab's
// API server (for svctrace run in it).
const VMAdminKubeconfig = "/etc/svctrace/admin.kubeconfig"

// StartVM boots a VM node named name, registers its Node object and
// waits until it answers commands. kube-proxy is in it, not started:
// StartKubeProxy on the VM starts it.
func (l *Lab) StartVM(t TB, name string, o VMOptions) (*VM, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k, err := debianKernel(ctx)
	if err != nil {
		return nil, err
	}
	kp, err := ensureBinaries(l.ProxyVersion, "kube-proxy")
	if err != nil {
		return nil, err
	}
	// The API server, from the VM: the host's loopback, through a proxy
	// into the control plane's namespace.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	go l.ServeAPIProxy(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	// The server's certificate names localhost and kubernetes, not the
	// address the VM dials.
	vmKubeconfig := func(user, token string) []byte {
		kc := kubeconfigWith(fmt.Sprintf("https://%s:%d", vmHost, port), l.pki.caPEM, user, "    token: "+token+"\n")
		return []byte(strings.Replace(string(kc), "    server: ", "    tls-server-name: kubernetes\n    server: ", 1))
	}
	proxyBin, err := os.ReadFile(filepath.Join(kp, "kube-proxy"))
	if err != nil {
		return nil, err
	}
	extra := map[string]cpioFile{
		"ctl.sh":                                   {data: []byte(vmCtl), mode: 0o755},
		"usr/local/bin/kube-proxy":                 {data: proxyBin, mode: 0o755},
		"var/lib/kube-proxy/kubeconfig":            {data: vmKubeconfig("kube-proxy", l.pki.proxyToken), mode: 0o600},
		strings.TrimPrefix(VMAdminKubeconfig, "/"): {data: vmKubeconfig("admin", l.pki.adminToken), mode: 0o600},
	}
	for p, data := range o.Files {
		extra[strings.TrimPrefix(p, "/")] = cpioFile{data: data, mode: 0o755}
	}
	files, err := vmInitramfs(ctx, k, strings.ReplaceAll(vmInit, "@NAME@", name), extra)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(l.Dir, "vm-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	f, err := os.Create(initrd)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriter(f)
	if err := writeCPIO(bw, files); err != nil {
		f.Close()
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := l.registerNode(&Node{Name: name, IP: vmIP, PodCIDR: "10.244.200.0/24"}); err != nil {
		return nil, fmt.Errorf("vm %s: registering its Node: %w", name, err)
	}
	v := &VM{Name: name, IP: vmIP, Console: filepath.Join(dir, "console.log")}
	sock := filepath.Join(dir, "ctl.sock")
	argv := []string{"qemu-system-x86_64", "-m", "1024", "-display", "none", "-monitor", "none", "-no-reboot",
		"-kernel", k.image, "-initrd", initrd, "-append", "console=ttyS0 panic=-1 quiet",
		"-serial", "file:" + v.Console,
		// Commands go through a virtio port, which has flow control: a
		// serial port's FIFO overruns while an emulated guest is busy.
		"-device", "virtio-serial-pci", "-chardev", "socket,id=ctl,path=" + sock + ",server=on,wait=off",
		"-device", "virtserialport,chardev=ctl,name=svctrace.ctl",
		"-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0"}
	for _, accel := range vmAccels() {
		start := time.Now()
		args := argv
		timeout := 2 * time.Minute
		if accel == "kvm" {
			args = append(slices.Clone(argv), "-enable-kvm", "-cpu", "host")
			timeout = 45 * time.Second // it boots in a few seconds, or fails
		}
		if v.proc, err = l.startProcWith("vm-"+name, args); err != nil {
			return nil, err
		}
		if err = v.connect(sock, timeout); err == nil {
			v.Accel = accel
			return v, nil
		}
		// KVM can fail where /dev/kvm exists (in a nested VM, "failed
		// to set MSR"): software emulation then.
		_ = v.proc.stop(5 * time.Second)
		_ = os.Remove(sock)
		v.Failed = append(v.Failed, fmt.Sprintf("%s after %s: %v", accel, time.Since(start).Round(time.Millisecond), err))
	}
	return nil, fmt.Errorf("vm %s: %s (console: %s)", name, strings.Join(v.Failed, "; "), v.Console)
}

// vmAccels are the accelerators a VM is started with, in turn until one
// boots: KVM where /dev/kvm opens (unless SVCTRACE_LAB_VM_KVM=0), then
// software emulation, which boots in seconds too.
func vmAccels() []string {
	if os.Getenv("SVCTRACE_LAB_VM_KVM") != "0" {
		if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
			f.Close()
			return []string{"kvm", "tcg"}
		}
	}
	return []string{"tcg"}
}

// connect waits for the control port and the VM's first answer.
func (v *VM) connect(sock string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			v.ctl, v.rd = c, bufio.NewReader(c)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no control port: %w", err)
		}
		select {
		case <-v.proc.done:
			return fmt.Errorf("qemu exited: %v", v.proc.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = v.ctl.SetReadDeadline(deadline)
	if _, _, err := v.readAnswer(); err != nil {
		return fmt.Errorf("the VM did not come up: %w", err)
	}
	return nil
}

// readAnswer reads a command's output up to its closing line.
func (v *VM) readAnswer() (string, int, error) {
	var out strings.Builder
	for {
		line, err := v.rd.ReadString('\n')
		if err != nil {
			return out.String(), -1, err
		}
		trimmed := strings.TrimRight(line, "\r\n")
		if rest, ok := strings.CutPrefix(trimmed, "<<<svctrace-vm-end "); ok {
			rc, err := strconv.Atoi(strings.TrimSuffix(rest, ">>>"))
			if err != nil {
				return out.String(), -1, fmt.Errorf("a closing line %q", trimmed)
			}
			return strings.TrimSuffix(out.String(), "\n"), rc, nil
		}
		out.WriteString(strings.TrimRight(line, "\r"))
	}
}

// Run runs a shell command line in the VM and returns its output (stdout
// and stderr); a status other than 0 is an error that carries the output.
func (v *VM) Run(ctx context.Context, command string) (string, error) {
	if strings.ContainsAny(command, "\n") {
		return "", fmt.Errorf("vm %s: a command is one line", v.Name)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if d, ok := ctx.Deadline(); ok {
		_ = v.ctl.SetDeadline(d)
	} else {
		_ = v.ctl.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	if _, err := fmt.Fprintln(v.ctl, command); err != nil {
		return "", fmt.Errorf("vm %s: %w", v.Name, err)
	}
	out, rc, err := v.readAnswer()
	if err != nil {
		return out, fmt.Errorf("vm %s: %s: %w", v.Name, command, err)
	}
	if rc != 0 {
		return out, fmt.Errorf("vm %s: %s: exit %d: %s", v.Name, command, rc, out)
	}
	return out, nil
}

// StartKubeProxy starts kube-proxy in the VM in mode (ipvs) and waits for
// its first sync, as on the lab's other nodes.
func (v *VM) StartKubeProxy(ctx context.Context, mode string, extraArgs ...string) error {
	args := []string{"/usr/local/bin/kube-proxy", "--kubeconfig=/var/lib/kube-proxy/kubeconfig",
		"--hostname-override=" + v.Name, "--proxy-mode=" + mode, "--cluster-cidr=" + ClusterCIDR,
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256"}
	args = append(args, extraArgs...)
	if _, err := v.Run(ctx, strings.Join(args, " ")+" >/tmp/kube-proxy.log 2>&1 & echo $! >/run/kube-proxy.pid"); err != nil {
		return err
	}
	for {
		if n := v.syncs(ctx); n > 0 {
			return nil
		}
		if ctx.Err() != nil {
			log, _ := v.Run(context.Background(), "tail -20 /tmp/kube-proxy.log")
			return fmt.Errorf("vm %s: kube-proxy did not sync: %w\n%s", v.Name, ctx.Err(), log)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// StopKubeProxy stops the VM's kube-proxy; what it programmed stays.
func (v *VM) StopKubeProxy(ctx context.Context) error {
	// The shell that serves commands is the VM's init, and does not reap
	// the orphans it inherits: an exited kube-proxy stays a zombie.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := v.Run(ctx, `p=$(cat /run/kube-proxy.pid); kill $p && while [ -e /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status; do sleep 0.1; done`)
	return err
}

// WaitSynced waits until the VM's kube-proxy has synced again after now:
// its sync count grows.
func (v *VM) WaitSynced(ctx context.Context) error {
	before := v.syncs(ctx)
	for ctx.Err() == nil {
		time.Sleep(300 * time.Millisecond)
		if v.syncs(ctx) > before {
			return nil
		}
	}
	return fmt.Errorf("vm %s: kube-proxy did not sync again: %w", v.Name, ctx.Err())
}

// syncs is how many syncs the VM's kube-proxy has made (of its IPv4
// rules), from its metrics; 0 before the first or while it does not
// answer. Releases before v1.33 publish the count without the ip_family
// label.
func (v *VM) syncs(ctx context.Context) int {
	out, err := v.Run(ctx, `wget -qO- http://127.0.0.1:10249/metrics | grep -E '^kubeproxy_sync_proxy_rules_duration_seconds_count(\{ip_family="IPv4"\})? ' | head -1`)
	if err != nil {
		return 0
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
