//go:build linux

package nftables

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The kernel's objects as nf_tables netlink messages carry them, before
// they are read into the ruleset: ReadNetlink dumps them, buildKernel turns
// them into a Ruleset.

// kTable is a table of a NFT_MSG_NEWTABLE message.
type kTable struct {
	family        uint8
	name, comment string
	handle        uint64
}

// kChain is a chain; hook is set for a base chain.
type kChain struct {
	family             uint8
	table, name, typ   string
	comment            string
	handle             uint64
	hooked             bool
	hooknum            uint32
	prio               int32
	policy             uint32
	hasPolicy, binding bool
}

// kSet is a set or map.
type kSet struct {
	family               uint8
	table, name, comment string
	handle               uint64
	flags                uint32
	keyType, keyLen      uint32
	dataType, dataLen    uint32
	objType              uint32
	hasData, hasObj      bool
	timeoutMS            uint64
	size                 uint32
	elems                []kElem
}

// kElem is one element of a set.
type kElem struct {
	key, keyEnd, data []byte
	verdict           *kVerdict
	flags             uint32
	timeoutMS         uint64
	expiresMS         uint64
	comment           string
	exprs             int
}

// kVerdict is a verdict: a code and, for jump and goto, a chain.
type kVerdict struct {
	code  int32
	chain string
}

// kRule is a rule with its expressions in order.
type kRule struct {
	family       uint8
	table, chain string
	handle       uint64
	comment      string
	exprs        []kExpr
}

// kExpr is one expression: its name and its attributes, by type.
type kExpr struct {
	name  string
	attrs []kAttr
}

type kAttr struct {
	typ  uint16
	data []byte
}

// attr is the data of the expression's attribute of type t (nil: absent).
func (e kExpr) attr(t uint16) []byte {
	for _, a := range e.attrs {
		if a.typ == t {
			return a.data
		}
	}
	return nil
}

func (e kExpr) has(t uint16) bool {
	for _, a := range e.attrs {
		if a.typ == t {
			return true
		}
	}
	return false
}

func (e kExpr) u32(t uint16) uint32 {
	if b := e.attr(t); len(b) >= 4 {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (e kExpr) u64(t uint16) uint64 {
	if b := e.attr(t); len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (e kExpr) str(t uint16) string { return cstring(e.attr(t)) }

// data is the value of a nested NFTA_DATA attribute of type t.
func (e kExpr) data(t uint16) []byte {
	b := e.attr(t)
	if b == nil {
		return nil
	}
	v, _ := dataValue2(b)
	return v
}

// kObj is a stateful object (counter, quota, ...) or a flowtable.
type kObj struct {
	family         uint8
	table, name    string
	kind           string
	handle         uint64
	packets, bytes uint64
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// nlAttrs walks the netlink attributes of a message or of a nested
// attribute, without allocating: next moves to the next one, typ and data
// are its type (flags cleared) and payload. A malformed list stops the
// walk and sets err.
type nlAttrs struct {
	b    []byte
	typ  uint16
	data []byte
	err  error
}

func attrsOf(b []byte) nlAttrs { return nlAttrs{b: b} }

func (a *nlAttrs) next() bool {
	if len(a.b) < 4 {
		if len(a.b) != 0 && a.err == nil {
			a.err = fmt.Errorf("netlink attributes: %d bytes left over", len(a.b))
		}
		return false
	}
	n := int(binary.NativeEndian.Uint16(a.b))
	if n < 4 || n > len(a.b) {
		a.err = fmt.Errorf("netlink attribute of length %d in %d bytes", n, len(a.b))
		a.b = nil
		return false
	}
	a.typ = binary.NativeEndian.Uint16(a.b[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
	a.data = a.b[4:n]
	a.b = a.b[min((n+3)&^3, len(a.b)):]
	return true
}

func (a *nlAttrs) u32() uint32 {
	if len(a.data) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(a.data)
}

func (a *nlAttrs) u64() uint64 {
	if len(a.data) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(a.data)
}

func (a *nlAttrs) str() string { return cstring(a.data) }

// body is a message's attributes after its nfgenmsg header; family is the
// header's.
func body(m netlink.Message) (uint8, []byte, error) {
	if len(m.Data) < 4 {
		return 0, nil, fmt.Errorf("nf_tables message of %d bytes", len(m.Data))
	}
	return m.Data[0], m.Data[4:], nil
}

// dataValue2 reads a nested NFTA_DATA: its value, or its verdict.
func dataValue2(b []byte) ([]byte, *kVerdict) {
	var val []byte
	var v *kVerdict
	for ad := attrsOf(b); ad.next(); {
		switch ad.typ {
		case unix.NFTA_DATA_VALUE:
			val = ad.data
		case unix.NFTA_DATA_VERDICT:
			v = &kVerdict{}
			for nd := attrsOf(ad.data); nd.next(); {
				switch nd.typ {
				case unix.NFTA_VERDICT_CODE:
					v.code = int32(nd.u32())
				case unix.NFTA_VERDICT_CHAIN:
					v.chain = nd.str()
				}
			}
		}
	}
	return val, v
}

// udataComment is the comment (of TLV type typ) of nftnl user data.
func udataComment(b []byte, typ uint8) string {
	s, _ := udata(b, typ)
	return cstring(s)
}

// udata finds the TLV of type typ in nftnl user data.
func udata(b []byte, typ uint8) ([]byte, bool) {
	for len(b) >= 2 {
		t, n := b[0], int(b[1])
		if len(b) < 2+n {
			return nil, false
		}
		if t == typ {
			return b[2 : 2+n], true
		}
		b = b[2+n:]
	}
	return nil, false
}

func parseTable(m netlink.Message) (kTable, error) {
	fam, b, err := body(m)
	t := kTable{family: fam}
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case unix.NFTA_TABLE_NAME:
			t.name = ad.str()
		case nftaTableHandle:
			t.handle = ad.u64()
		case nftaTableUserdata:
			t.comment = udataComment(ad.data, 0)
		}
	}
	return t, errors.Join(err, ad.err)
}

func parseChain(m netlink.Message) (kChain, error) {
	fam, b, err := body(m)
	c := kChain{family: fam}
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case unix.NFTA_CHAIN_TABLE:
			c.table = ad.str()
		case unix.NFTA_CHAIN_NAME:
			c.name = ad.str()
		case unix.NFTA_CHAIN_HANDLE:
			c.handle = ad.u64()
		case unix.NFTA_CHAIN_TYPE:
			c.typ = ad.str()
		case unix.NFTA_CHAIN_POLICY:
			c.policy, c.hasPolicy = ad.u32(), true
		case nftaChainFlags:
			c.binding = ad.u32()&0x4 != 0 // NFT_CHAIN_BINDING
		case nftaChainUserdata:
			c.comment = udataComment(ad.data, 0)
		case unix.NFTA_CHAIN_HOOK:
			c.hooked = true
			nd := attrsOf(ad.data)
			for nd.next() {
				switch nd.typ {
				case unix.NFTA_HOOK_HOOKNUM:
					c.hooknum = nd.u32()
				case unix.NFTA_HOOK_PRIORITY:
					c.prio = int32(nd.u32())
				}
			}
			err = nd.err
		}
	}
	return c, errors.Join(err, ad.err)
}

// udataSetComment is the type of a set's comment in its nftnl user data.
const udataSetComment = 7

func parseSet(m netlink.Message) (*kSet, error) {
	fam, b, err := body(m)
	s := &kSet{family: fam}
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case unix.NFTA_SET_TABLE:
			s.table = ad.str()
		case unix.NFTA_SET_NAME:
			s.name = ad.str()
		case nftaSetHandle:
			s.handle = ad.u64()
		case unix.NFTA_SET_FLAGS:
			s.flags = ad.u32()
		case unix.NFTA_SET_KEY_TYPE:
			s.keyType = ad.u32()
		case unix.NFTA_SET_KEY_LEN:
			s.keyLen = ad.u32()
		case unix.NFTA_SET_DATA_TYPE:
			s.dataType, s.hasData = ad.u32(), true
		case unix.NFTA_SET_DATA_LEN:
			s.dataLen = ad.u32()
		case unix.NFTA_SET_OBJ_TYPE:
			s.objType, s.hasObj = ad.u32(), true
		case unix.NFTA_SET_TIMEOUT:
			s.timeoutMS = ad.u64()
		case unix.NFTA_SET_DESC:
			nd := attrsOf(ad.data)
			for nd.next() {
				if nd.typ == unix.NFTA_SET_DESC_SIZE {
					s.size = nd.u32()
				}
			}
			err = nd.err
		case unix.NFTA_SET_USERDATA:
			s.comment = udataComment(ad.data, udataSetComment)
		}
	}
	return s, errors.Join(err, ad.err)
}

// parseElems appends the elements of one NFT_MSG_NEWSETELEM message.
func parseElems(m netlink.Message, out []kElem) ([]kElem, error) {
	_, b, err := body(m)
	ad := attrsOf(b)
	for err == nil && ad.next() {
		if ad.typ != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			continue
		}
		list := attrsOf(ad.data)
		for list.next() {
			var e kElem
			nd := attrsOf(list.data)
			for nd.next() {
				switch nd.typ {
				case unix.NFTA_SET_ELEM_KEY:
					e.key, _ = dataValue2(nd.data)
				case nftaSetElemKeyEnd:
					e.keyEnd, _ = dataValue2(nd.data)
				case unix.NFTA_SET_ELEM_DATA:
					e.data, e.verdict = dataValue2(nd.data)
				case unix.NFTA_SET_ELEM_FLAGS:
					e.flags = nd.u32()
				case unix.NFTA_SET_ELEM_TIMEOUT:
					e.timeoutMS = nd.u64()
				case unix.NFTA_SET_ELEM_EXPIRATION:
					e.expiresMS = nd.u64()
				case unix.NFTA_SET_ELEM_USERDATA:
					e.comment = udataComment(nd.data, 0)
				case unix.NFTA_SET_ELEM_EXPR, nftaSetElemExpressions, unix.NFTA_SET_ELEM_OBJREF:
					e.exprs++
				}
			}
			out = append(out, e)
			err = errors.Join(err, nd.err)
		}
		err = errors.Join(err, list.err)
	}
	return out, errors.Join(err, ad.err)
}

func parseRule(m netlink.Message) (kRule, error) {
	fam, b, err := body(m)
	r := kRule{family: fam}
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case unix.NFTA_RULE_TABLE:
			r.table = ad.str()
		case unix.NFTA_RULE_CHAIN:
			r.chain = ad.str()
		case unix.NFTA_RULE_HANDLE:
			r.handle = ad.u64()
		case unix.NFTA_RULE_USERDATA:
			r.comment = udataComment(ad.data, 0)
		case unix.NFTA_RULE_EXPRESSIONS:
			list := attrsOf(ad.data)
			for list.next() {
				var e kExpr
				nd := attrsOf(list.data)
				for nd.next() {
					switch nd.typ {
					case unix.NFTA_EXPR_NAME:
						e.name = nd.str()
					case unix.NFTA_EXPR_DATA:
						xd := attrsOf(nd.data)
						for xd.next() {
							e.attrs = append(e.attrs, kAttr{typ: xd.typ, data: xd.data})
						}
						err = errors.Join(err, xd.err)
					}
				}
				r.exprs = append(r.exprs, e)
				err = errors.Join(err, nd.err)
			}
			err = errors.Join(err, list.err)
		}
	}
	return r, errors.Join(err, ad.err)
}

// objKinds names the stateful object types as nft does.
var objKinds = map[uint32]string{1: "counter", 2: "quota", 3: "ct helper", 4: "limit", 5: "connlimit",
	6: "tunnel", 7: "ct timeout", 8: "secmark", 9: "ct expectation", 10: "synproxy"}

func parseObj(m netlink.Message) (kObj, error) {
	fam, b, err := body(m)
	o := kObj{family: fam}
	var data []byte
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case unix.NFTA_OBJ_TABLE:
			o.table = ad.str()
		case unix.NFTA_OBJ_NAME:
			o.name = ad.str()
		case nftaObjHandle:
			o.handle = ad.u64()
		case unix.NFTA_OBJ_TYPE:
			t := ad.u32()
			o.kind = objKinds[t]
			if o.kind == "" {
				o.kind = fmt.Sprintf("object type %d", t)
			}
		case unix.NFTA_OBJ_DATA:
			data = ad.data
		}
	}
	if o.kind == "counter" {
		cd := attrsOf(data)
		for cd.next() {
			switch cd.typ {
			case unix.NFTA_COUNTER_BYTES:
				o.bytes = cd.u64()
			case unix.NFTA_COUNTER_PACKETS:
				o.packets = cd.u64()
			}
		}
		err = errors.Join(err, cd.err)
	}
	return o, errors.Join(err, ad.err)
}

func parseFlowtable(m netlink.Message) (kObj, error) {
	fam, b, err := body(m)
	o := kObj{family: fam, kind: "flowtable"}
	ad := attrsOf(b)
	for err == nil && ad.next() {
		switch ad.typ {
		case nftaFlowtableTable:
			o.table = ad.str()
		case nftaFlowtableName:
			o.name = ad.str()
		case nftaFlowtableHandle:
			o.handle = ad.u64()
		}
	}
	return o, errors.Join(err, ad.err)
}

// Attribute numbers of nf_tables.h that golang.org/x/sys/unix lacks.
const (
	nftaTableHandle        = 4
	nftaTableUserdata      = 6
	nftaChainFlags         = 10
	nftaChainUserdata      = 12
	nftaSetHandle          = 16
	nftaSetElemKeyEnd      = 10
	nftaSetElemExpressions = 11
	nftaObjHandle          = 6
	nftaDynsetExpressions  = 10
	nftDynsetOpDelete      = 2
	nftaFlowtableTable     = 1
	nftaFlowtableName      = 2
	nftaFlowtableHandle    = 5
	nftaBitwiseOp          = 6
	nftBitwiseBool         = 0
)
