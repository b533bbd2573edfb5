//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ServeAPIProxy forwards every connection accepted on ln (a listener of this namespace, such as
// 127.0.0.1:6443) to kube-apiserver inside the lab, until ln is closed: hack/lab.sh gives people
// a kubeconfig that works from the host this way, without a route into the lab. The API
// server's certificate is valid for 127.0.0.1.
func (l *Lab) ServeAPIProxy(ln net.Listener) error {
	nsPath := filepath.Join(netnsDir, l.cpNS)
	target := net.JoinHostPort(APIServerIP, strconv.Itoa(APIPort))
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			up, err := dialInNetns(ctx, nsPath, "tcp", target)
			cancel()
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			go pipe(up, c)
			go pipe(c, up)
			wg.Wait()
		}()
	}
}

// HostKubeconfig is an admin kubeconfig for the API server at addr (where ServeAPIProxy
// listens, "127.0.0.1:6443").
func (l *Lab) HostKubeconfig(addr string) []byte {
	return kubeconfig(fmt.Sprintf("https://%s", addr), l.pki.caPEM, "admin", l.pki.adminToken)
}

// Prefix is the prefix of every name the lab gives namespaces, cgroups and directories
// ("svct-<pid>-<rnd>-").
func (l *Lab) Prefix() string { return l.prefix }

// ControlPlaneNetNS is the control-plane namespace's name (for ip netns exec).
func (l *Lab) ControlPlaneNetNS() string { return l.cpNS }
