//go:build linux

// Command labnet is the lab's traffic helper. It runs inside the lab's network namespaces
// (under `ip netns exec`) and uses only the standard library.
//
//	labnet serve --name NAME [--tcp PORT]... [--udp PORT]... [--sctp PORT]... [--ready-file F]
//	labnet dial tcp|udp|sctp HOST:PORT [--count N] [--src IP] [--timeout D]
//	labnet sctp-check
//	labnet exists FILE | labnet create FILE | labnet remove FILE
//
// serve answers every TCP connection, UDP datagram and SCTP association with NAME and a
// newline, so a client can tell which backend it reached. It writes --ready-file once all
// listeners are bound.
//
// exists exits 0 when FILE exists and 1 when not; create makes it (empty), remove removes it. In a
// container image that holds labnet alone, they are a readiness probe on the --ready-file and
// the way to fail it and pass it again.
//
// dial makes --count separate attempts (a new socket, hence a new source port, each time) and
// prints one line per attempt: the name the server answered, or "ERROR <reason>". It exits 1
// when any attempt failed.
//
// sctp-check exits 0 when the kernel supports SCTP sockets, 3 when it does not.
//
// SCTP uses one-to-one style sockets (socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP)) through the
// syscall package; the kernel must have CONFIG_IP_SCTP.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const exitNoSCTP = 3

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "dial":
		err = dial(os.Args[2:])
	case "hold":
		err = hold(os.Args[2:])
	case "exists":
		if len(os.Args) != 3 {
			usage()
		}
		if _, e := os.Stat(os.Args[2]); e != nil {
			os.Exit(1)
		}
		return
	case "create":
		if len(os.Args) != 3 {
			usage()
		}
		err = os.WriteFile(os.Args[2], nil, 0o644)
	case "remove":
		if len(os.Args) != 3 {
			usage()
		}
		err = os.Remove(os.Args[2])
	case "sctp-check":
		if e := sctpCheck(); e != nil {
			fmt.Fprintln(os.Stderr, "labnet: sctp:", e)
			os.Exit(exitNoSCTP)
		}
		return
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labnet:", err)
		var ne noSCTPError
		if errors.As(err, &ne) {
			os.Exit(exitNoSCTP)
		}
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  labnet serve --name NAME [--tcp PORT]... [--udp PORT]... [--sctp PORT]... [--ready-file F]
  labnet dial tcp|udp|sctp HOST:PORT [--count N] [--src IP] [--timeout D]
  labnet sctp-check
  labnet exists FILE
  labnet create FILE
  labnet remove FILE`)
	os.Exit(2)
}

type portList []int

func (p *portList) String() string { return fmt.Sprint(*p) }
func (p *portList) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q", s)
	}
	*p = append(*p, n)
	return nil
}

// parseInterspersed parses flags that may come before, between or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

type noSCTPError struct{ err error }

func (e noSCTPError) Error() string {
	return "kernel has no SCTP socket support (CONFIG_IP_SCTP): " + e.err.Error()
}
func (e noSCTPError) Unwrap() error { return e.err }

func sctpErr(err error) error {
	if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.ESOCKTNOSUPPORT) ||
		errors.Is(err, syscall.EAFNOSUPPORT) {
		return noSCTPError{err}
	}
	return err
}

func sctpCheck() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return sctpErr(err)
	}
	return syscall.Close(fd)
}

// ---- serve ----

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var tcp, tcpHold, udp, sctp portList
	name := fs.String("name", "", "name to answer with")
	ready := fs.String("ready-file", "", "file to create once listening")
	fs.Var(&tcp, "tcp", "TCP port (repeatable)")
	fs.Var(&tcpHold, "tcp-hold", "TCP port whose connections stay open until the client closes them (repeatable)")
	fs.Var(&udp, "udp", "UDP port (repeatable)")
	fs.Var(&sctp, "sctp", "SCTP port (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", pos)
	}
	if *name == "" {
		return errors.New("serve: --name is required")
	}
	reply := []byte(*name + "\n")
	errc := make(chan error, len(tcp)+len(tcpHold)+len(udp)+len(sctp))
	for i, p := range append(append(portList(nil), tcp...), tcpHold...) {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			return err
		}
		keep := i >= len(tcp)
		go func() { errc <- serveTCP(ln, reply, keep) }()
	}
	for _, p := range udp {
		pc, err := net.ListenPacket("udp", ":"+strconv.Itoa(p))
		if err != nil {
			return err
		}
		go func() { errc <- serveUDP(pc, reply) }()
	}
	for _, p := range sctp {
		fd, err := sctpListen(p)
		if err != nil {
			return fmt.Errorf("sctp port %d: %w", p, err)
		}
		go func() { errc <- serveSCTP(fd, reply) }()
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("serving as %s: tcp %v udp %v sctp %v\n", *name, tcp, udp, sctp)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		fmt.Println("stopping on", s)
		return nil
	case err := <-errc:
		return err
	}
}

// serveTCP answers each connection with the name; keep holds the
// connection open until the client closes it (a long-lived flow).
func serveTCP(ln net.Listener, reply []byte, keep bool) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			if keep {
				c.Write(reply)
				io.Copy(io.Discard, c)
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(reply)
		}()
	}
}

func serveUDP(pc net.PacketConn, reply []byte) error {
	buf := make([]byte, 2048)
	for {
		_, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		pc.WriteTo(reply, addr)
	}
}

func sctpListen(port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return -1, sctpErr(err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Listen(fd, 128); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// serveSCTP accepts in a blocking loop; the goroutine owns an OS thread while blocked, which is
// fine for a test helper.
func serveSCTP(fd int, reply []byte) error {
	for {
		nfd, _, err := syscall.Accept(fd)
		if err != nil {
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ECONNABORTED) {
				continue
			}
			return err
		}
		go func() {
			defer syscall.Close(nfd)
			syscall.Write(nfd, reply)
		}()
	}
}

// ---- dial ----

func dial(args []string) error {
	fs := flag.NewFlagSet("dial", flag.ContinueOnError)
	count := fs.Int("count", 1, "number of attempts")
	src := fs.String("src", "", "source IP to bind")
	sport := fs.Int("sport", 0, "source port to bind (0: any): every attempt then is the same flow to conntrack")
	timeout := fs.Duration("timeout", 2*time.Second, "per-attempt timeout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return errors.New("dial: want PROTO HOST:PORT")
	}
	proto, target := strings.ToLower(pos[0]), pos[1]
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return fmt.Errorf("dial: %q: %w (want IP:PORT)", target, err)
	}
	var srcAddr netip.Addr
	if *src != "" {
		if srcAddr, err = netip.ParseAddr(*src); err != nil {
			return fmt.Errorf("dial: --src: %w", err)
		}
	}
	var once func() (string, error)
	switch proto {
	case "tcp":
		once = func() (string, error) { return dialTCP(ap, srcAddr, *timeout) }
	case "udp":
		once = func() (string, error) { return dialUDP(ap, srcAddr, *sport, *timeout) }
	case "sctp":
		once = func() (string, error) { return dialSCTP(ap, srcAddr, *timeout) }
	default:
		return fmt.Errorf("dial: unknown protocol %q", proto)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	failed := 0
	for range *count {
		name, err := once()
		if err == nil {
			fmt.Fprintln(out, name)
			continue
		}
		failed++
		fmt.Fprintf(out, "ERROR %v\n", err)
		var ne noSCTPError
		if errors.As(err, &ne) {
			out.Flush()
			return err
		}
	}
	if failed > 0 {
		out.Flush()
		return fmt.Errorf("%d of %d attempts failed", failed, *count)
	}
	return nil
}

func readName(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 512))
	s := strings.TrimSpace(string(b))
	if s == "" {
		if err == nil {
			err = errors.New("empty answer")
		}
		return "", err
	}
	return strings.SplitN(s, "\n", 2)[0], nil
}

func dialTCP(ap netip.AddrPort, src netip.Addr, timeout time.Duration) (string, error) {
	d := net.Dialer{Timeout: timeout}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	c, err := d.Dial("tcp", ap.String())
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	return readName(c)
}

func dialUDP(ap netip.AddrPort, src netip.Addr, sport int, timeout time.Duration) (string, error) {
	var laddr *net.UDPAddr
	if src.IsValid() || sport != 0 {
		laddr = &net.UDPAddr{Port: sport}
		if src.IsValid() {
			laddr.IP = src.AsSlice()
		}
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("?\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

func dialSCTP(ap netip.AddrPort, src netip.Addr, timeout time.Duration) (string, error) {
	if !ap.Addr().Is4() {
		return "", errors.New("sctp: only IPv4 is supported")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return "", sctpErr(err)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "sctp") // closes fd
	defer f.Close()
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if src.IsValid() {
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: src.As4()}); err != nil {
			return "", err
		}
	}
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}); err != nil {
		return "", fmt.Errorf("sctp connect: %w", err)
	}
	buf := make([]byte, 512)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		return "", fmt.Errorf("sctp read: %w", err)
	}
	s := strings.TrimSpace(string(buf[:max(n, 0)]))
	if s == "" {
		return "", errors.New("empty answer")
	}
	return s, nil
}

// hold opens one TCP connection, prints the answering backend and the
// local port, and keeps the connection open until killed or --for ends:
// a long-lived flow whose conntrack entry must survive other repairs.
func hold(args []string) error {
	fs := flag.NewFlagSet("hold", flag.ContinueOnError)
	dur := fs.Duration("for", time.Hour, "how long to keep the connection open")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("hold: want HOST:PORT")
	}
	c, err := net.DialTimeout("tcp", pos[0], 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 512)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := c.Read(buf)
	fmt.Printf("%s %d\n", strings.TrimSpace(string(buf[:n])), c.LocalAddr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	time.Sleep(*dur)
	return nil
}
