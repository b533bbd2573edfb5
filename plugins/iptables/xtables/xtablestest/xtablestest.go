// Package xtablestest answers the legacy iptables reader in the kernel's
// place: a Player plays back a recording (internal/kernelrec) of a real
// kernel's answers through the xtables.Kernel seam, and a Recorder wraps
// the real socket to make one. See README.md.
//
// A recording's exchanges are the reader's calls, in order. The request
// is a line of text (see Request), so that a reader that asks something
// else is told what in words; the reply is one buffer:
//
//   - Tables: the list of tables as /proc/net/ip_tables_names prints it,
//     one name a line; ENOENT when the kernel lists none.
//   - Get: the whole buffer as the kernel filled it (its length is the
//     length asked), or the errno it answered instead (EAGAIN when the
//     table changed between GET_INFO and GET_ENTRIES).
package xtablestest

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

// TablesRequest is the request of a Tables call:
//
//	tables ip_tables_names
func TablesRequest(fam xtables.Family) []byte {
	return []byte("tables " + fam.NamesFile())
}

// Request is the request of a Get call: what the kernel reads of the
// question (the socket level, the table's name up to its NUL,
// GET_ENTRIES' size of the entries, and the buffer's length):
//
//	GET_INFO level 0 table filter len 84
//	GET_ENTRIES level 41 table nat size 1234 len 1274
//
// and for any other option "option N level L len N".
func Request(fam xtables.Family, opt xtables.Option, buf []byte) []byte {
	name := buf[:min(len(buf), xtables.TableNameLen)]
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	switch {
	case opt == xtables.GetInfo:
		return fmt.Appendf(nil, "GET_INFO level %d table %s len %d", fam.Level(), name, len(buf))
	case opt == xtables.GetEntries && len(buf) >= xtables.EntriesHead:
		size := binary.NativeEndian.Uint32(buf[xtables.TableNameLen:])
		return fmt.Appendf(nil, "GET_ENTRIES level %d table %s size %d len %d", fam.Level(), name, size, len(buf))
	}
	return fmt.Appendf(nil, "option %d level %d len %d", int(opt), fam.Level(), len(buf))
}

// Player answers a reader from a recording, as the kernel did.
type Player struct {
	fam xtables.Family
	p   *kernelrec.Player
}

var _ xtables.Kernel = (*Player)(nil)

// Play plays rec back to a reader of the family.
func Play(fam xtables.Family, rec *kernelrec.Recording) *Player {
	return &Player{fam: fam, p: rec.Play(nil)}
}

// Done says whether the reader made every recorded request.
func (p *Player) Done() error {
	if err := p.p.Done(); err != nil {
		return fmt.Errorf("xtablestest: %w", err)
	}
	return nil
}

// answer is the recorded reply to req: its one buffer, or the error
// recorded instead.
func (p *Player) answer(req []byte) ([]byte, error) {
	e, err := p.p.Answer(req)
	if err != nil {
		return nil, fmt.Errorf("xtablestest: asked %q: %w", req, err)
	}
	if e.Err != "" {
		return nil, kernelrec.Err(e.Err)
	}
	if len(e.Replies) != 1 {
		return nil, fmt.Errorf("xtablestest: %q: the recording has %d replies, not one", req, len(e.Replies))
	}
	return e.Replies[0], nil
}

// Tables answers the recorded list of tables.
func (p *Player) Tables() ([]string, error) {
	rep, err := p.answer(TablesRequest(p.fam))
	if err != nil {
		return nil, fmt.Errorf("listing the %v tables: %w", p.fam, err)
	}
	return strings.Fields(string(rep)), nil
}

// Get fills buf with the recorded buffer, which must be as long: a
// shorter one is a truncated recording, not an answer.
func (p *Player) Get(opt xtables.Option, buf []byte) error {
	req := Request(p.fam, opt, buf)
	rep, err := p.answer(req)
	if err != nil {
		return err
	}
	if len(rep) != len(buf) {
		return fmt.Errorf("xtablestest: %q: the recorded reply has %d bytes, the buffer %d", req, len(rep), len(buf))
	}
	copy(buf, rep)
	return nil
}
