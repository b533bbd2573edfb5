//go:build linux

package lab

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
)

// APIRelay forwards connections to a second port of the API server's address on to
// kube-apiserver, and can freeze: it then keeps every connection open and passes nothing either
// way, and accepts new ones that go nowhere, as a load balancer or a NAT that lost its state does
// in front of an API server. A client of the relay (kube-proxy started with --master) sees its
// watches stall without an error, while every other client of the lab's API server is served.
type APIRelay struct {
	// Addr is where the relay listens, inside the lab (APIServerIP:port).
	Addr string

	ln   net.Listener
	mu   sync.Mutex
	gate chan struct{} // non-nil while frozen; closed to thaw
	live map[net.Conn]bool
	done bool
}

// StartAPIRelay starts a relay on port of the API server's address, in the control-plane
// namespace; Close stops it.
func (l *Lab) StartAPIRelay(port int) (*APIRelay, error) {
	nsPath := filepath.Join(netnsDir, l.cpNS)
	r := &APIRelay{Addr: net.JoinHostPort(APIServerIP, strconv.Itoa(port)), live: map[net.Conn]bool{}}
	if err := netns.Run(nsPath, func() error {
		var err error
		r.ln, err = net.Listen("tcp", r.Addr)
		return err
	}); err != nil {
		return nil, err
	}
	target := net.JoinHostPort(APIServerIP, strconv.Itoa(APIPort))
	go func() {
		for {
			c, err := r.ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c, nsPath, target)
		}
	}()
	return r, nil
}

func (r *APIRelay) serve(c net.Conn, nsPath, target string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := dialInNetns(ctx, nsPath, "tcp", target)
	cancel()
	if err != nil {
		c.Close()
		return
	}
	if !r.track(c, up) {
		return
	}
	defer r.untrack(c, up)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.pipe(up, c) }()
	go func() { defer wg.Done(); r.pipe(c, up) }()
	wg.Wait()
}

// pipe copies src to dst, holding each read while the relay is frozen.
func (r *APIRelay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (r *APIRelay) wait() {
	r.mu.Lock()
	g := r.gate
	r.mu.Unlock()
	if g != nil {
		<-g
	}
}

func (r *APIRelay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.live[c] = true
	}
	return true
}

func (r *APIRelay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(r.live, c)
	}
}

// Freeze stops the relay passing anything, on every connection, open or to come.
func (r *APIRelay) Freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate == nil {
		r.gate = make(chan struct{})
	}
}

// Thaw lets the relay pass what it held and whatever follows.
func (r *APIRelay) Thaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = nil
	}
}

// Close stops the relay and closes its connections.
func (r *APIRelay) Close() error {
	err := r.ln.Close()
	r.Thaw()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	for c := range r.live {
		c.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
