//go:build linux

package iptables

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
)

// TestReplayLegacySpoiled: a recording the reader does not match (it asks
// something else, or more, or less), or whose answers are cut or spoiled,
// is a clear error, never a panic or a text printed from half an answer.
func TestReplayLegacySpoiled(t *testing.T) {
	c := recorded(t, kubeProxyRecording)
	at := getEntriesAt(t, c.rec)
	for _, tc := range []struct {
		name  string
		spoil func(r *kernelrec.Recording)
		want  string
	}{
		{"another family asks", func(r *kernelrec.Recording) {
			r.Exchanges[0].Request = []byte("tables ip6_tables_names")
		}, `request 1 differs from the recording's`},
		{"another table asked", func(r *kernelrec.Recording) {
			r.Exchanges[1].Request = []byte(strings.Replace(string(r.Exchanges[1].Request), "table ", "table x", 1))
		}, `request 2 differs from the recording's`},
		{"entries cut short", func(r *kernelrec.Recording) {
			rep := r.Exchanges[at].Replies[0]
			r.Exchanges[at].Replies[0] = rep[:len(rep)-100]
		}, "bytes, the buffer"},
		{"no answer", func(r *kernelrec.Recording) {
			r.Exchanges[at].Replies = nil
		}, "replies, not one"},
		{"recording cut short", func(r *kernelrec.Recording) {
			r.Exchanges = r.Exchanges[:at]
		}, "the recording has only"},
		{"entries spoiled", func(r *kernelrec.Recording) {
			rep := r.Exchanges[at].Replies[0]
			clear(rep[len(rep)/2:])
		}, "entry at offset"},
		{"kernel refuses", func(r *kernelrec.Recording) {
			r.Exchanges[at].Replies, r.Exchanges[at].Err = nil, "EPERM"
		}, "reading its entries: operation not permitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := spoiled(c.rec)
			tc.spoil(r)
			got, _, err := replay(c, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one with %q", err, tc.want)
			}
			if got != "" {
				t.Errorf("printed %d bytes of a failed read", len(got))
			}
		})
	}
}

// TestReplayLegacyCanFail: a recording whose kernel said something else
// than the tool printed (a chain's name changed in the entries) reads to
// another text, which the comparison of TestReplayLegacy catches.
func TestReplayLegacyCanFail(t *testing.T) {
	c := recorded(t, kubeProxyRecording)
	r := spoiled(c.rec)
	rep := r.Exchanges[getEntriesAt(t, r)].Replies[0]
	i := bytes.Index(rep, []byte("KUBE-SERVICES\x00"))
	if i < 0 {
		t.Fatal("no KUBE-SERVICES chain in the recording's first table")
	}
	rep[i+len("KUBE-SERVICE")] = 'Z'
	got, _, err := replay(c, r)
	if err != nil {
		t.Fatal(err)
	}
	if withoutComments(got) == withoutComments(c.save) {
		t.Error("a changed chain name read to the same text")
	}
	if !strings.Contains(got, ":KUBE-SERVICEZ - [0:0]") {
		t.Error("the changed chain name is not in the text read")
	}
}

// TestReplayLegacyUnasked: a reader that stops before the recording's end
// has not made every request, and Done says so.
func TestReplayLegacyUnasked(t *testing.T) {
	c := recorded(t, kubeProxyRecording)
	r := spoiled(c.rec)
	// A second copy of the tables: the reader reads them once.
	r.Exchanges = append(r.Exchanges, spoiled(c.rec).Exchanges[1:]...)
	if _, p, err := replay(c, r); err != nil {
		t.Fatal(err)
	} else if err := p.Done(); err == nil || !strings.Contains(err.Error(), "recorded requests made") {
		t.Errorf("Done: %v, want the requests not made", err)
	}
}

// TestReplayLegacyNoTables: a kernel that lists no tables (the module not
// loaded) is ErrNoLegacy.
func TestReplayLegacyNoTables(t *testing.T) {
	c := recorded(t, kubeProxyRecording)
	r := &kernelrec.Recording{Exchanges: []kernelrec.Exchange{{Request: c.rec.Exchanges[0].Request, Err: "ENOENT"}}}
	if _, _, err := replay(c, r); !errors.Is(err, ErrNoLegacy) {
		t.Errorf("got %v, want ErrNoLegacy", err)
	}
}

// TestReplayLegacyChanging: a table that changes between its size and its
// entries (EAGAIN) is asked again, and given up after readAttempts.
func TestReplayLegacyChanging(t *testing.T) {
	c := recorded(t, kubeProxyRecording)
	at := getEntriesAt(t, c.rec)
	info, entries := c.rec.Exchanges[at-1], c.rec.Exchanges[at]
	again := kernelrec.Exchange{Request: entries.Request, Err: "EAGAIN"}
	// Changed once, then read: the same text as read at once.
	r := spoiled(c.rec)
	r.Exchanges = append(r.Exchanges[:at:at], again, info)
	r.Exchanges = append(r.Exchanges, c.rec.Exchanges[at:]...)
	got, p, err := replay(c, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Done(); err != nil {
		t.Error(err)
	}
	if withoutComments(got) != withoutComments(c.save) {
		diffLines(t, withoutComments(got), withoutComments(c.save))
	}
	// Changed at every read.
	r = &kernelrec.Recording{Exchanges: c.rec.Exchanges[: at-1 : at-1]}
	for range readAttempts {
		r.Exchanges = append(r.Exchanges, info, again)
	}
	if _, _, err := replay(c, r); err == nil || !strings.Contains(err.Error(), "changed during each of 5 reads") {
		t.Errorf("got %v, want the table changing at each read", err)
	}
}
