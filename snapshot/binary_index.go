package snapshot

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
)

// An index section finds objects of one object section by a key
// ("namespace/name", or "namespace/service-name" for EndpointSlices):
//
//	count   uint32
//	entries count × {key offset, key length, object number, extra offset,
//	        extra length}, each uint32, sorted by key then object number
//	blob    the keys and extras the entries point into
//
// An object appears under one key at most (an EndpointSlice without the
// service-name label under none); a key may have several objects. The
// extra of a Pod is its labels (encodeLabels), so that a selector can be
// matched without decoding Pods.
const indexEntrySize = 20

type indexEntry struct {
	key   string
	obj   uint32
	extra []byte
}

func encodeIndex(entries []indexEntry) ([]byte, error) {
	slices.SortFunc(entries, func(a, b indexEntry) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.obj, b.obj))
	})
	head := 4 + len(entries)*indexEntrySize
	out := make([]byte, head)
	binary.LittleEndian.PutUint32(out, uint32(len(entries)))
	for i, e := range entries {
		keyOff := len(out) - head
		out = append(out, e.key...)
		extraOff := len(out) - head
		out = append(out, e.extra...)
		if len(out)-head > math.MaxUint32 {
			return nil, fmt.Errorf("index of %d objects: more than 4 GiB of keys", len(entries))
		}
		p := out[4+i*indexEntrySize:]
		binary.LittleEndian.PutUint32(p, uint32(keyOff))
		binary.LittleEndian.PutUint32(p[4:], uint32(len(e.key)))
		binary.LittleEndian.PutUint32(p[8:], e.obj)
		binary.LittleEndian.PutUint32(p[12:], uint32(extraOff))
		binary.LittleEndian.PutUint32(p[16:], uint32(len(e.extra)))
	}
	return out, nil
}

// index is a parsed index section; every entry was checked to point
// inside the blob and at an object that exists.
type index struct {
	id      string
	count   int
	entries []byte
	blob    []byte
}

func parseIndex(id string, b []byte, objects uint32) (*index, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("damaged file: %s is %d bytes, too short for its entry count", sectionLabel(id), len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	head := 4 + n*indexEntrySize
	if head > uint64(len(b)) {
		return nil, fmt.Errorf("damaged file: %s counts %d entries, which do not fit in its %d bytes", sectionLabel(id), n, len(b))
	}
	x := &index{id: id, count: int(n), entries: b[4:head], blob: b[head:]}
	blob := uint64(len(x.blob))
	for i := range x.count {
		e := x.entries[i*indexEntrySize:]
		ko, kl := uint64(binary.LittleEndian.Uint32(e)), uint64(binary.LittleEndian.Uint32(e[4:]))
		obj := binary.LittleEndian.Uint32(e[8:])
		eo, el := uint64(binary.LittleEndian.Uint32(e[12:])), uint64(binary.LittleEndian.Uint32(e[16:]))
		if ko+kl > blob || eo+el > blob {
			return nil, fmt.Errorf("damaged file: %s: entry %d points past the end of the section", sectionLabel(id), i)
		}
		if obj >= objects {
			return nil, fmt.Errorf("damaged file: %s: entry %d names object %d, but the file holds %d", sectionLabel(id), i, obj, objects)
		}
	}
	return x, nil
}

func (x *index) field(i, at int) uint32 {
	return binary.LittleEndian.Uint32(x.entries[i*indexEntrySize+at:])
}

func (x *index) key(i int) []byte {
	o := x.field(i, 0)
	return x.blob[o : o+x.field(i, 4)]
}

func (x *index) obj(i int) uint32 { return x.field(i, 8) }

func (x *index) extra(i int) []byte {
	o := x.field(i, 12)
	return x.blob[o : o+x.field(i, 16)]
}

// lookup returns the range of entries whose key is key.
func (x *index) lookup(key string) (lo, hi int) {
	k := []byte(key)
	lo = sort.Search(x.count, func(i int) bool { return bytes.Compare(x.key(i), k) >= 0 })
	hi = lo
	for hi < x.count && bytes.Equal(x.key(hi), k) {
		hi++
	}
	return lo, hi
}

// prefixRange returns the range of entries whose key starts with prefix.
func (x *index) prefixRange(prefix string) (lo, hi int) {
	p := []byte(prefix)
	lo = sort.Search(x.count, func(i int) bool { return bytes.Compare(x.key(i), p) >= 0 })
	hi = lo + sort.Search(x.count-lo, func(i int) bool { return !bytes.HasPrefix(x.key(lo+i), p) })
	return lo, hi
}

// keys returns every key once, in order, as substrings of one string.
func (x *index) keys() []string {
	all := string(x.blob)
	out := make([]string, 0, x.count)
	for i := range x.count {
		o, n := x.field(i, 0), x.field(i, 4)
		k := all[o : o+n]
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// encodeLabels writes labels sorted by key: a uvarint count, then each key
// and value as a uvarint length and the bytes.
func encodeLabels(labels map[string]string) []byte {
	if len(labels) == 0 {
		return nil
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := binary.AppendUvarint(nil, uint64(len(keys)))
	for _, k := range keys {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(labels[k])))
		out = append(out, labels[k]...)
	}
	return out
}

// labelsMatch reports whether encoded labels (encodeLabels) have every
// key of selector with its value.
func labelsMatch(encoded []byte, selector map[string]string) (bool, error) {
	if len(selector) == 0 {
		return false, nil
	}
	n, k := binary.Uvarint(encoded)
	if len(encoded) == 0 {
		n, k = 0, 0
	} else if k <= 0 {
		return false, fmt.Errorf("damaged label count")
	}
	rest := encoded[k:]
	matched := 0
	for range n {
		var key, val []byte
		var err error
		if key, rest, err = readString(rest, "label key"); err != nil {
			return false, err
		}
		if val, rest, err = readString(rest, "label value"); err != nil {
			return false, err
		}
		if want, ok := selector[string(key)]; ok {
			if want != string(val) {
				return false, nil
			}
			matched++
		}
	}
	return matched == len(selector), nil
}
