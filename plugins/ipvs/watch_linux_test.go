//go:build linux

package ipvs

import (
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestWatchKernel: in a namespace of the test's, kube-ipvs0 made, an
// address bound to it and one taken off, and the link deleted are each
// told within a second; an address on another link, and nothing at all,
// are not told; the watch ends with its context.
//
// The host's kernel has no dummy interfaces: bridges stand for them (an
// address is an address on either).
func TestWatchKernel(t *testing.T) {
	ns := netnstest.New(t, "ipvsw", "ip")
	netnstest.Run(t, ns, "", "ip", "link", "add", "other0", "type", "bridge")
	changed := netnstest.Watch(t, ns, Loader{}.WatchKernel)
	// The watch joins its groups once started: repeat the first change
	// until it is heard.
	heard := false
	for i := 0; i < 50 && !heard; i++ {
		netnstest.Run(t, ns, "", "ip", "link", "add", Dummy, "type", "bridge")
		select {
		case <-changed:
			heard = true
		case <-time.After(100 * time.Millisecond):
			netnstest.Run(t, ns, "", "ip", "link", "del", Dummy)
		}
	}
	if !heard {
		t.Fatal("kube-ipvs0 made was not told within 5 s")
	}
	quiet := func(what string) {
		t.Helper()
		deadline := time.After(300 * time.Millisecond)
		for {
			select {
			case <-changed:
				t.Fatalf("%s: told of a change of kube-ipvs0", what)
			case <-deadline:
				return
			}
		}
	}
	// Its link coming up may be told again: drain, then hear nothing.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-changed:
	default:
	}
	quiet("nothing changed")
	netnstest.Run(t, ns, "", "ip", "addr", "add", "10.1.2.3/32", "dev", "other0")
	quiet("an address bound to another link")
	for _, argv := range [][]string{
		{"ip", "addr", "add", "10.96.0.10/32", "dev", Dummy},
		{"ip", "addr", "add", "fd00::10/128", "dev", Dummy},
		{"ip", "addr", "del", "10.96.0.10/32", "dev", Dummy},
		{"ip", "link", "del", Dummy},
	} {
		netnstest.Run(t, ns, "", argv...)
		select {
		case <-changed:
		case <-time.After(time.Second):
			t.Fatalf("%v was not told within 1 s", argv)
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case <-changed:
		default:
		}
		quiet("after " + argv[len(argv)-1])
	}
}
