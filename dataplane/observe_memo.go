package dataplane

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/svctrace/svctrace/behavior"
)

// A node agent observes the same node again and again, and between two of
// its checks the kernel's rules mostly change for a few Services, or none:
// walking every frontend of ten thousand Services again is most of a
// check's cost. An ObserveMemo keeps an observation for the next one: each
// group of frontends (one Service's, see observeAll) with its outcomes and
// the parts of the state its walks read. The next observation of the node
// takes a group's outcomes from the memo instead of walking it again when
// nothing its walks depend on changed: the group's frontends and their
// inputs (Service, source ranges, the expected hairpin backends), the
// parts of the state they read, and everything every walk depends on (the
// state's shared parts, the node's addresses, the probe space, the
// options). A plane that can tell its state's parts (PartedState) and its
// scopes' reads (ScopeReads) takes part; any other is walked in full.

// PartedState is a Plane whose state divides into parts for an
// ObserveMemo: Shared digests every part a walk in env may read but those
// a scope's walks tell (ScopeReads), which Parts digest by part. ok is
// false when the plane cannot tell what its walks read in env.
type PartedState interface {
	StateParts(env *Env) (parts StateParts, ok bool)
	// KnownClean tells the plane, before anything reads its state, the
	// parts (by id, with their digests) of an earlier state of the node
	// that it read without a note or an error: a part of the same digest
	// need not be read again to answer for its lines (see PrimeMemo).
	KnownClean(parts map[uint64]uint64)
	// Clean says, once the walks are done and the notes taken, that no
	// part of the state gave a note or an error.
	Clean() bool
}

// StateParts are a state's digests for an ObserveMemo.
type StateParts struct {
	Shared uint64
	Parts  map[uint64]uint64
}

// ScopeReads is the walker of a scope (ScopedWalker.Scope) that tells the
// parts of the state (StateParts.Parts' keys) its walks read so far.
type ScopeReads interface {
	AppendReads(ids []uint64) []uint64
}

// ObserveMemo is an observation of one node and family kept for the next
// (ObserveInput.Memo). Its zero value holds none. One observation at a time.
type ObserveMemo struct {
	global uint64
	parts  map[uint64]uint64
	groups map[uint64]*memoGroup
	// clean: every part of the state of parts was read without a note or
	// an error (PartedState.Clean).
	clean bool
	// Reused and Walked count the groups of frontends of the last
	// observation taken from the memo and walked.
	Reused, Walked int
}

// memoGroup is one group's observation: the parts its walks read, its
// frontends as observed, packed (see packer: they share nothing with the
// table they were taken from, nor with the state), and the notes of its
// walks.
type memoGroup struct {
	reads     []uint64
	frontends []memoFrontend
	notes     []string
}

// memoRun is one observation's use of a memo.
type memoRun struct {
	prev   *ObserveMemo // nil: nothing to take
	parts  StateParts
	global uint64
	mu     sync.Mutex // the workers file their groups at once
	groups map[uint64]*memoGroup
}

// PrimeMemo tells p, just loaded, the parts of m's state it read cleanly
// (PartedState.KnownClean), so that it need not read them again.
func PrimeMemo(m *ObserveMemo, p Plane) {
	if ps, ok := p.(PartedState); ok && m != nil && m.clean && m.parts != nil {
		ps.KnownClean(m.parts)
	}
}

// startMemo readies in's memo for an observation of p in env, or returns
// nil when the observation cannot use one (its walks are narrowed or keep
// their rules, or the plane cannot tell what they read): the memo is then
// emptied.
func startMemo(p Plane, in ObserveInput, env *Env, space behavior.ProbeSpace) *memoRun {
	m := in.Memo
	if m == nil {
		return nil
	}
	m.Reused, m.Walked = 0, 0
	// Walks with their rules name the dump's lines, which a change
	// elsewhere in the dump moves: only lean observations are kept.
	ps, ok := p.(PartedState)
	if !ok || in.Only != nil || !in.NoRules {
		m.forget()
		return nil
	}
	parts, ok := ps.StateParts(env)
	if !ok {
		m.forget()
		return nil
	}
	g := globalDigest(parts.Shared, in, env, space)
	r := &memoRun{parts: parts, global: g, groups: map[uint64]*memoGroup{}}
	if m.groups != nil && m.global == g {
		r.prev = m
	}
	return r
}

// globalDigest digests what every walk depends on beside the state's parts.
func globalDigest(shared uint64, in ObserveInput, env *Env, space behavior.ProbeSpace) uint64 {
	h := xxhash.New()
	b := binary.LittleEndian.AppendUint64(nil, shared)
	b = binary.LittleEndian.AppendUint64(b, space.Digest())
	for _, a := range env.LocalAddrs {
		b = a.AppendTo(b)
		b = append(b, ',')
	}
	b = append(b, env.PodIface...)
	b = append(b, 0, flag(in.NoRules), flag(in.HairpinDueOnly))
	b = append(b, in.Node...)
	b = append(b, 0)
	b = append(b, in.Family...)
	h.Write(b)
	return h.Sum64()
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// groupDigest digests a group's frontends as they are before their walks,
// with the backends their expected frontends call hairpin masquerading
// for (due, see ObserveInput.HairpinDueOnly).
func groupDigest(group []*behavior.Frontend, due map[behavior.Key]*behavior.Frontend) uint64 {
	h := xxhash.New()
	var b []byte
	for _, f := range group {
		b = append(b[:0], f.Key.String()...)
		b = append(b, 0)
		b = append(b, f.Service...)
		b = append(b, 0)
		b = append(b, strings.Join(f.SourceRanges, ",")...)
		b = append(b, 0, flag(f.Listed), flag(due != nil))
		if e := due[f.Key]; e != nil {
			for _, be := range e.Outcomes[behavior.FromPod].Backends {
				if be.HairpinMasquerade {
					b = append(b, be.Endpoint...)
					b = append(b, ',')
				}
			}
		}
		b = append(b, '\n')
		h.Write(b)
	}
	return h.Sum64()
}

// take fills group from the memo when nothing its walks depend on
// changed, and says whether it did; notes are the walks' notes then.
func (r *memoRun) take(key uint64, group []*behavior.Frontend) (notes []string, ok bool) {
	if r == nil || r.prev == nil {
		return nil, false
	}
	mg := r.prev.groups[key]
	if mg == nil || len(mg.frontends) != len(group) {
		return nil, false
	}
	for _, id := range mg.reads {
		was, ok := r.prev.parts[id]
		if now, ok2 := r.parts.Parts[id]; !ok || !ok2 || was != now {
			return nil, false
		}
	}
	for i, f := range group {
		*f = mg.frontends[i].unpack()
	}
	r.mu.Lock()
	r.groups[key] = mg
	r.mu.Unlock()
	return mg.notes, true
}

// keep files a group just walked, with the parts its walks read.
func (r *memoRun) keep(key uint64, group []*behavior.Frontend, reads []uint64, notes []string) {
	if r == nil {
		return
	}
	mg := &memoGroup{reads: slices.Clone(reads), notes: cloneStrings(notes), frontends: make([]memoFrontend, len(group))}
	p := newPacker()
	for i, f := range group {
		mg.frontends[i] = p.frontend(*f)
	}
	r.mu.Lock()
	r.groups[key] = mg
	r.mu.Unlock()
}

// finish makes this observation of p the memo's.
func (r *memoRun) finish(m *ObserveMemo, p Plane, reused, walked int) {
	if r == nil {
		return
	}
	m.global, m.parts, m.groups = r.global, r.parts.Parts, r.groups
	m.clean = p.(PartedState).Clean()
	m.Reused, m.Walked = reused, walked
}

// forget empties the memo.
func (m *ObserveMemo) forget() {
	m.global, m.parts, m.groups, m.clean = 0, nil, nil, false
}
