//go:build linux

package nftables

import (
	"sync"

	"golang.org/x/sys/unix"
)

// An ElementCache keeps, from one read of a network namespace's ruleset to
// the next, the elements of its bound anonymous sets: the sets and maps
// written inside rules (kube-proxy's `numgen random mod N vmap { … }` of
// each Service), one per rule. The kernel refuses to add or remove an
// element of such a set once its rule is committed, so a set the next
// read finds again under the same handles holds the same elements; the
// read then does not ask for them, which is where a node of many rules
// costs the kernel most (it finds each set by scanning its table's list of
// sets, so asking for all of them costs the square of their number).
//
// A set is found again when its table has the same handle (the kernel
// numbers tables anew when one is made again, so a table deleted and made
// again does not match) and so has the set, under the same name and type.
// Its elements are kept only when they cannot change or name anything that
// can: no timeout or expiry, no expression (a counter's values move), and
// every chain a verdict names must have kept its handle (a chain renamed,
// or another made under its name, reads again).
//
// One cache serves one network namespace, read again and again (the node
// agent); it is safe for one read at a time.
type ElementCache struct {
	mu   sync.Mutex
	sets map[setKey]*keptSet
	// reused is the number of sets whose elements the last read took from
	// the cache.
	reused int
}

// NewElementCache returns an empty cache.
func NewElementCache() *ElementCache { return &ElementCache{} }

// setKey finds a set again: its table's family, name and handle, and its
// own handle.
type setKey struct {
	family      uint8
	table       string
	tableHandle uint64
	handle      uint64
}

// keptSet is a set's elements as a read found them, with what must not
// have changed for them to stand: the set's name and type, and the handle
// of every chain a verdict names.
type keptSet struct {
	name                       string
	flags, keyType, keyLen     uint32
	dataType, dataLen, objType uint32
	hasData, hasObj            bool
	elems                      []kElem
	chains                     map[string]uint64
}

// Reused is the number of sets whose elements the last read took from the
// cache rather than the kernel.
func (c *ElementCache) Reused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reused
}

// tableHandles are the handles of a read's tables and chains, by name.
type tableHandles struct {
	tables map[tableRef]uint64
	chains map[tableRef]map[string]uint64
}

type tableRef struct {
	family uint8
	name   string
}

func handlesOf(k *kernelState) tableHandles {
	h := tableHandles{tables: make(map[tableRef]uint64, len(k.tables)), chains: map[tableRef]map[string]uint64{}}
	for _, t := range k.tables {
		h.tables[tableRef{t.family, t.name}] = t.handle
	}
	for _, ch := range k.chains {
		ref := tableRef{ch.family, ch.table}
		if h.chains[ref] == nil {
			h.chains[ref] = map[string]uint64{}
		}
		h.chains[ref][ch.name] = ch.handle
	}
	return h
}

func (h tableHandles) key(s *kSet) (setKey, bool) {
	th, ok := h.tables[tableRef{s.family, s.table}]
	return setKey{family: s.family, table: s.table, tableHandle: th, handle: s.handle}, ok && s.handle != 0
}

// fill gives the sets of k the cache holds their elements, and tells which
// sets it gave (the others are read from the kernel); h are k's handles.
func (c *ElementCache) fill(k *kernelState, h tableHandles) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	given := make([]bool, len(k.sets))
	c.reused = 0
	for i, s := range k.sets {
		key, ok := h.key(s)
		if !ok {
			continue
		}
		kept := c.sets[key]
		if kept == nil || !kept.stands(s, h.chains[tableRef{s.family, s.table}]) {
			continue
		}
		s.elems = kept.elems
		given[i] = true
		c.reused++
	}
	return given
}

// stands tells whether the kept elements are those of s, read now with the
// chains of its table.
func (k *keptSet) stands(s *kSet, chains map[string]uint64) bool {
	if k.name != s.name || k.flags != s.flags || k.keyType != s.keyType || k.keyLen != s.keyLen ||
		k.dataType != s.dataType || k.dataLen != s.dataLen || k.objType != s.objType ||
		k.hasData != s.hasData || k.hasObj != s.hasObj {
		return false
	}
	for name, handle := range k.chains {
		if h, ok := chains[name]; !ok || h != handle {
			return false
		}
	}
	return true
}

// keep replaces what the cache holds by the sets of k, a whole read of the
// ruleset, that it may keep (k.given are those the read took from it).
func (c *ElementCache) keep(k *kernelState) {
	h, given := k.handles, k.given
	c.mu.Lock()
	old := c.sets
	c.mu.Unlock()
	sets := make(map[setKey]*keptSet, len(old))
	for i, s := range k.sets {
		key, ok := h.key(s)
		if !ok {
			continue
		}
		if given[i] {
			sets[key] = old[key]
			continue
		}
		if !cacheable(s) {
			continue
		}
		kept := &keptSet{name: s.name, flags: s.flags, keyType: s.keyType, keyLen: s.keyLen,
			dataType: s.dataType, dataLen: s.dataLen, objType: s.objType, hasData: s.hasData, hasObj: s.hasObj,
			elems: ownElems(s.elems)}
		chains := h.chains[tableRef{s.family, s.table}]
		for _, e := range s.elems {
			if e.verdict == nil || e.verdict.chain == "" {
				continue
			}
			handle, ok := chains[e.verdict.chain]
			if !ok {
				kept = nil
				break
			}
			if kept.chains == nil {
				kept.chains = map[string]uint64{}
			}
			kept.chains[e.verdict.chain] = handle
		}
		if kept != nil {
			sets[key] = kept
		}
	}
	c.mu.Lock()
	c.sets = sets
	c.mu.Unlock()
}

// cacheable tells whether a set's elements cannot change while it keeps
// its handle: a bound anonymous set (constant from its commit), without
// timeouts, expiries or expressions on its elements.
func cacheable(s *kSet) bool {
	const fixed = unix.NFT_SET_ANONYMOUS | unix.NFT_SET_CONSTANT
	if s.flags&fixed != fixed || s.flags&(unix.NFT_SET_TIMEOUT|unix.NFT_SET_EVAL) != 0 || s.timeoutMS != 0 {
		return false
	}
	for _, e := range s.elems {
		if e.exprs != 0 || e.timeoutMS != 0 || e.expiresMS != 0 {
			return false
		}
	}
	return true
}

// ownElems copies elements out of the netlink messages they were read
// from, into one array of bytes: the cache holds them past the read.
func ownElems(elems []kElem) []kElem {
	n := 0
	for _, e := range elems {
		n += len(e.key) + len(e.keyEnd) + len(e.data)
	}
	buf := make([]byte, 0, n)
	own := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	out := make([]kElem, len(elems))
	for i, e := range elems {
		out[i] = e
		out[i].key, out[i].keyEnd, out[i].data = own(e.key), own(e.keyEnd), own(e.data)
		if e.verdict != nil {
			v := *e.verdict
			out[i].verdict = &v
		}
	}
	return out
}
