package ipvsnetlinktest_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// TestRecordPlayback records a played-back conversation and gets the
// recording back: a Recorder keeps each request and datagram as sent
// and received (the replies renumbered to the new requests).
func TestRecordPlayback(t *testing.T) {
	for _, name := range []string{"kube-ipvs0-render.rec", "kube-ipvs0-absent.rec", "ipvs-absent.rec"} {
		t.Run(name, func(t *testing.T) {
			orig, err := kernelrec.Read(filepath.Join("..", "..", "testdata", "kernel", name))
			if err != nil {
				t.Fatal(err)
			}
			p := ipvsnetlinktest.Play(orig)
			r := ipvsnetlinktest.NewRecorder(p)
			if name == "ipvs-absent.rec" {
				if c, err := ipvsnetlink.OpenIPVS(r); c != nil || err != nil {
					t.Fatal(c, err)
				}
			} else {
				_, _ = ipvsnetlink.Addrs(r, "kube-ipvs0")
			}
			if err := p.Done(); err != nil {
				t.Fatal(err)
			}
			got := r.Recording("n")
			if len(got.Exchanges) != len(orig.Exchanges) {
				t.Fatalf("%d exchanges recorded, %d played", len(got.Exchanges), len(orig.Exchanges))
			}
			for i, e := range got.Exchanges {
				o := orig.Exchanges[i]
				if !kernelrec.SameNetlink(o.Request, e.Request) || len(e.Replies) != len(o.Replies) || e.Err != o.Err {
					t.Fatalf("exchange %d differs", i)
				}
				for j, rep := range e.Replies {
					seq, pid := kernelrec.Header(e.Request)
					if !bytes.Equal(rep, kernelrec.Renumber(o.Replies[j], seq, pid)) {
						t.Errorf("exchange %d reply %d differs", i, j)
					}
				}
			}
		})
	}
}
