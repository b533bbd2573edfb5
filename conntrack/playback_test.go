//go:build linux

package conntrack

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/conntrack/ctnetlink/ctnetlinktest"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"golang.org/x/sys/unix"
)

// scenarios are the kernel tests that record (SVCTRACE_RECORD=1), by
// recording name; TestPlayback runs them on their recordings.
func scenarios() []struct {
	name string
	run  func(*testing.T, testNS)
} {
	return []struct {
		name string
		run  func(*testing.T, testNS)
	}{
		{"create-dump-delete-count", createDumpDeleteCount},
		{"dump-filters", dumpFilters},
		{"traffic", textMatchesDump},
	}
}

// TestPlayback runs the kernel tests without root, on what a kernel
// answered them (testdata/kernel/*.rec): the same requests must be made,
// every one of them, and the entries decoded from the answers must be
// the ones conntrack -L printed for the same table, Delete and Count
// must give the kernel's answers.
func TestPlayback(t *testing.T) {
	for _, s := range scenarios() {
		t.Run(s.name, func(t *testing.T) {
			s.run(t, playback(t, s.name))
		})
	}
}

// loadRec reads a recording of testdata/kernel.
func loadRec(t *testing.T, name string) *kernelrec.Recording {
	t.Helper()
	rec, err := kernelrec.Read(filepath.Join(recordDir, name+".rec"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// firstDump returns the index of the first dump request of rec.
func firstDump(t *testing.T, rec *kernelrec.Recording) int {
	t.Helper()
	for i, e := range rec.Exchanges {
		if len(e.Request) >= unix.NLMSG_HDRLEN && binary.NativeEndian.Uint16(e.Request[6:])&unix.NLM_F_DUMP == unix.NLM_F_DUMP {
			return i
		}
	}
	t.Fatal("no dump in the recording")
	return 0
}

// TestPlaybackErrors: a reader that asks what was not recorded, or a
// recording cut short, is an error, not a wrong answer.
func TestPlaybackErrors(t *testing.T) {
	ctx := context.Background()
	rec := loadRec(t, "create-dump-delete-count")
	i := firstDump(t, rec)
	nop := func(Entry) error { return nil }
	play := func(rec *kernelrec.Recording, exchanges int) table {
		cut := *rec
		cut.Exchanges = cut.Exchanges[:exchanges]
		return table{open: ctnetlinktest.NewPlayer(&cut).Open}
	}

	// Another request: the recording starts with creating testEntries.
	tb := play(rec, len(rec.Exchanges))
	if err := tb.create(ctx, testEntries()[1:]); err == nil || !strings.Contains(err.Error(), "differs from the recording's") {
		t.Errorf("create of other entries: %v, want a request that differs", err)
	}

	// A dump whose last reply datagram (its end) is missing.
	short := *rec
	short.Exchanges = append([]kernelrec.Exchange(nil), rec.Exchanges[:i+1]...)
	d := &short.Exchanges[i]
	d.Replies = d.Replies[:len(d.Replies)-1]
	tb = play(&short, i+1)
	if err := tb.create(ctx, testEntries()); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.dump(ctx, Filter{}, nop); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("dump of a truncated recording: %v, want an error", err)
	}

	// A reply datagram cut in the middle of a message.
	d.Replies = append([][]byte(nil), rec.Exchanges[i].Replies...)
	d.Replies[0] = d.Replies[0][:len(d.Replies[0])/2+1]
	tb = play(&short, i+1)
	if err := tb.create(ctx, testEntries()); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.dump(ctx, Filter{}, nop); err == nil || !strings.Contains(err.Error(), "bad message length") {
		t.Errorf("dump of a cut datagram: %v, want a bad message length", err)
	}

	// A reply of another kind of message where an entry is expected: a
	// stats reply cannot be decoded as an entry.
	var stats kernelrec.Exchange
	for _, e := range rec.Exchanges {
		if len(e.Request) >= 6 && binary.NativeEndian.Uint16(e.Request[4:])&0xff == ctnetlink.MsgGetStats {
			stats = e
			break
		}
	}
	wrong := short
	wrong.Exchanges = append(append([]kernelrec.Exchange(nil), rec.Exchanges[:i]...), kernelrec.Exchange{Request: rec.Exchanges[i].Request, Replies: stats.Replies})
	tb = play(&wrong, i+1)
	if err := tb.create(ctx, testEntries()); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.dump(ctx, Filter{}, nop); err == nil {
		t.Error("a stats reply decoded as entries without error")
	}
}
