package xtablestest

import (
	"strings"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

// Recorder passes a reader's calls to a Kernel (the real socket) and
// keeps each call and its answer.
type Recorder struct {
	fam xtables.Family
	k   xtables.Kernel
	rec kernelrec.Recorder
}

var _ xtables.Kernel = (*Recorder)(nil)

// Record wraps k, a Kernel of the family.
func Record(fam xtables.Family, k xtables.Kernel) *Recorder {
	return &Recorder{fam: fam, k: k}
}

// Tables lists the tables and keeps the list.
func (r *Recorder) Tables() ([]string, error) {
	names, err := r.k.Tables()
	var reply [][]byte
	if err == nil {
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n + "\n")
		}
		reply = [][]byte{[]byte(b.String())}
	}
	r.rec.Add(TablesRequest(r.fam), reply, errName(err))
	return names, err
}

// Get asks the option and keeps the question and the buffer filled.
func (r *Recorder) Get(opt xtables.Option, buf []byte) error {
	req := Request(r.fam, opt, buf) // before the kernel overwrites it
	err := r.k.Get(opt, buf)
	var reply [][]byte
	if err == nil {
		reply = [][]byte{buf}
	}
	r.rec.Add(req, reply, errName(err))
	return err
}

// Recording is what was recorded, with the note.
func (r *Recorder) Recording(note ...string) *kernelrec.Recording {
	return r.rec.Recording(note...)
}

// errName is how the recording names err (kernelrec.ErrName), "" for
// none.
func errName(err error) string {
	if err == nil {
		return ""
	}
	return kernelrec.ErrName(err)
}
