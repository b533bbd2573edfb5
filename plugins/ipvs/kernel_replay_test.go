package ipvs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// replays are the recordings of testdata/kernel whose names start with
// prefix, each with the tool's output recorded beside it.
func replays(t *testing.T, prefix string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(recordDir, prefix+"*.rec"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recordings %s*.rec in %s: %v", prefix, recordDir, err)
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(strings.TrimSuffix(p, ".rec") + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

func load(t *testing.T, path string) *ipvsnetlinktest.Player {
	t.Helper()
	p, err := ipvsnetlinktest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDummyReplay plays back each recording of kube-ipvs0's addresses
// (made by TestDummyKernelRecorded in a namespace of the real kernel)
// and finds the listing ip -o addr show printed of the same state, every
// recorded request made. No root needed.
func TestDummyReplay(t *testing.T) {
	for path, tool := range replays(t, "kube-ipvs0-") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p := load(t, path)
			d, err := readDummyFrom(p)
			if strings.HasSuffix(path, "-absent.rec") {
				if !errors.Is(err, dataplane.ErrNotInKernel) {
					t.Fatalf("no %s: error %v, want ErrNotInKernel", Dummy, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if want := withoutAddrFlags(tool); d.Text != want {
				t.Errorf("the listing differs from ip's:\n--- ip\n%s--- reader\n%s", want, d.Text)
			}
			if err := p.Done(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestIPVSReplay plays back each recording of the IPVS table (made by
// TestIPVSKernelRecorded: the host's kernel without IPVS, the VM lab's
// with it) and finds the table ipvsadm -Ln printed of the same state.
func TestIPVSReplay(t *testing.T) {
	for path, tool := range replays(t, "ipvs-") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p := load(t, path)
			tab, err := readTable(p)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasSuffix(path, "-absent.rec"):
				if tab != nil {
					t.Fatalf("a kernel without IPVS read as a table:\n%s", tab.Listing())
				}
			case tab == nil:
				t.Fatal("no IPVS read")
			case tab.Listing() != ipvsadmText(tool):
				t.Errorf("the listing differs from ipvsadm -Ln's:\n--- ipvsadm\n%s--- reader\n%s", tool, tab.Listing())
			}
			if err := p.Done(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReplayMismatch: a reader that asks what was not recorded, is
// answered a truncated datagram or fewer datagrams than it waits for, or
// leaves recorded requests unasked, gets an error naming that, never a
// listing.
func TestReplayMismatch(t *testing.T) {
	base, err := kernelrec.Read(filepath.Join(recordDir, "kube-ipvs0-render.rec"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(r *kernelrec.Recording)) *ipvsnetlinktest.Player {
		r := *base
		r.Exchanges = nil
		for _, e := range base.Exchanges {
			e.Request = bytes.Clone(e.Request)
			e.Replies = append([][]byte(nil), e.Replies...)
			r.Exchanges = append(r.Exchanges, e)
		}
		fn(&r)
		return ipvsnetlinktest.Play(&r)
	}
	for name, c := range map[string]struct {
		p    *ipvsnetlinktest.Player
		want string
	}{
		"other request": {edit(func(r *kernelrec.Recording) {
			q := r.Exchanges[0].Request
			copy(q[bytes.Index(q, []byte(Dummy)):], "kube-ipvs9")
		}), "request 1 differs from the recording's"},
		"truncated reply": {edit(func(r *kernelrec.Recording) {
			rep := r.Exchanges[1].Replies[0]
			r.Exchanges[1].Replies[0] = rep[:len(rep)-30]
		}), "truncated netlink datagram"},
		"reply cut short": {edit(func(r *kernelrec.Recording) {
			r.Exchanges[1].Replies = r.Exchanges[1].Replies[:1]
		}), "no more datagrams"},
		"no answer": {edit(func(r *kernelrec.Recording) {
			r.Exchanges = r.Exchanges[:1]
		}), "the recording has only 1"},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := readDummyFrom(c.p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q (listing %q)", err, c.want, d.Text)
			}
			if d.Text != "" {
				t.Errorf("a failed read gave a listing:\n%s", d.Text)
			}
		})
	}
	t.Run("requests left", func(t *testing.T) {
		p := edit(func(r *kernelrec.Recording) { r.Exchanges = append(r.Exchanges, r.Exchanges[1]) })
		if _, err := readDummyFrom(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Done(); err == nil || !strings.Contains(err.Error(), "2 of 3 recorded requests made") {
			t.Fatalf("Done: %v", err)
		}
	})
}
