//go:build linux

package nftables

import (
	"encoding/binary"
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

// decoder reads the attributes of one message or nested attribute.
func decoder(b []byte) (*netlink.AttributeDecoder, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	ad.ByteOrder = binary.BigEndian
	return ad, nil
}

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
	ad, err := decoder(b)
	if err != nil {
		return nil, nil
	}
	var val []byte
	var v *kVerdict
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_DATA_VALUE:
			val = ad.Bytes()
		case unix.NFTA_DATA_VERDICT:
			v = &kVerdict{}
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case unix.NFTA_VERDICT_CODE:
						v.code = int32(nd.Uint32())
					case unix.NFTA_VERDICT_CHAIN:
						v.chain = nd.String()
					}
				}
				return nil
			})
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
	if err != nil {
		return kTable{}, err
	}
	t := kTable{family: fam}
	ad, err := decoder(b)
	if err != nil {
		return t, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_TABLE_NAME:
			t.name = ad.String()
		case nftaTableHandle:
			t.handle = ad.Uint64()
		case nftaTableUserdata:
			t.comment = udataComment(ad.Bytes(), 0)
		}
	}
	return t, ad.Err()
}

func parseChain(m netlink.Message) (kChain, error) {
	fam, b, err := body(m)
	if err != nil {
		return kChain{}, err
	}
	c := kChain{family: fam}
	ad, err := decoder(b)
	if err != nil {
		return c, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_CHAIN_TABLE:
			c.table = ad.String()
		case unix.NFTA_CHAIN_NAME:
			c.name = ad.String()
		case unix.NFTA_CHAIN_HANDLE:
			c.handle = ad.Uint64()
		case unix.NFTA_CHAIN_TYPE:
			c.typ = ad.String()
		case unix.NFTA_CHAIN_POLICY:
			c.policy, c.hasPolicy = ad.Uint32(), true
		case nftaChainFlags:
			c.binding = ad.Uint32()&0x4 != 0 // NFT_CHAIN_BINDING
		case nftaChainUserdata:
			c.comment = udataComment(ad.Bytes(), 0)
		case unix.NFTA_CHAIN_HOOK:
			c.hooked = true
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case unix.NFTA_HOOK_HOOKNUM:
						c.hooknum = nd.Uint32()
					case unix.NFTA_HOOK_PRIORITY:
						c.prio = int32(nd.Uint32())
					}
				}
				return nil
			})
		}
	}
	return c, ad.Err()
}

// udataSetComment is the type of a set's comment in its nftnl user data.
const udataSetComment = 7

func parseSet(m netlink.Message) (*kSet, error) {
	fam, b, err := body(m)
	if err != nil {
		return nil, err
	}
	s := &kSet{family: fam}
	ad, err := decoder(b)
	if err != nil {
		return nil, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_SET_TABLE:
			s.table = ad.String()
		case unix.NFTA_SET_NAME:
			s.name = ad.String()
		case nftaSetHandle:
			s.handle = ad.Uint64()
		case unix.NFTA_SET_FLAGS:
			s.flags = ad.Uint32()
		case unix.NFTA_SET_KEY_TYPE:
			s.keyType = ad.Uint32()
		case unix.NFTA_SET_KEY_LEN:
			s.keyLen = ad.Uint32()
		case unix.NFTA_SET_DATA_TYPE:
			s.dataType, s.hasData = ad.Uint32(), true
		case unix.NFTA_SET_DATA_LEN:
			s.dataLen = ad.Uint32()
		case unix.NFTA_SET_OBJ_TYPE:
			s.objType, s.hasObj = ad.Uint32(), true
		case unix.NFTA_SET_TIMEOUT:
			s.timeoutMS = ad.Uint64()
		case unix.NFTA_SET_DESC:
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					if nd.Type() == unix.NFTA_SET_DESC_SIZE {
						s.size = nd.Uint32()
					}
				}
				return nil
			})
		case unix.NFTA_SET_USERDATA:
			u := ad.Bytes()
			s.comment = udataComment(u, udataSetComment)
		}
	}
	return s, ad.Err()
}

// parseElems appends the elements of one NFT_MSG_NEWSETELEM message.
func parseElems(m netlink.Message, out []kElem) ([]kElem, error) {
	_, b, err := body(m)
	if err != nil {
		return out, err
	}
	ad, err := decoder(b)
	if err != nil {
		return out, err
	}
	for ad.Next() {
		if ad.Type() != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			continue
		}
		ad.Nested(func(list *netlink.AttributeDecoder) error {
			for list.Next() {
				var e kElem
				list.Nested(func(nd *netlink.AttributeDecoder) error {
					for nd.Next() {
						switch nd.Type() {
						case unix.NFTA_SET_ELEM_KEY:
							e.key, _ = dataValue2(nd.Bytes())
						case nftaSetElemKeyEnd:
							e.keyEnd, _ = dataValue2(nd.Bytes())
						case unix.NFTA_SET_ELEM_DATA:
							e.data, e.verdict = dataValue2(nd.Bytes())
						case unix.NFTA_SET_ELEM_FLAGS:
							e.flags = nd.Uint32()
						case unix.NFTA_SET_ELEM_TIMEOUT:
							e.timeoutMS = nd.Uint64()
						case unix.NFTA_SET_ELEM_EXPIRATION:
							e.expiresMS = nd.Uint64()
						case unix.NFTA_SET_ELEM_USERDATA:
							e.comment = udataComment(nd.Bytes(), 0)
						case unix.NFTA_SET_ELEM_EXPR, nftaSetElemExpressions, unix.NFTA_SET_ELEM_OBJREF:
							e.exprs++
						}
					}
					return nil
				})
				out = append(out, e)
			}
			return nil
		})
	}
	return out, ad.Err()
}

func parseRule(m netlink.Message) (kRule, error) {
	fam, b, err := body(m)
	if err != nil {
		return kRule{}, err
	}
	r := kRule{family: fam}
	ad, err := decoder(b)
	if err != nil {
		return r, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_RULE_TABLE:
			r.table = ad.String()
		case unix.NFTA_RULE_CHAIN:
			r.chain = ad.String()
		case unix.NFTA_RULE_HANDLE:
			r.handle = ad.Uint64()
		case unix.NFTA_RULE_USERDATA:
			r.comment = udataComment(ad.Bytes(), 0)
		case unix.NFTA_RULE_EXPRESSIONS:
			ad.Nested(func(list *netlink.AttributeDecoder) error {
				for list.Next() {
					var e kExpr
					list.Nested(func(nd *netlink.AttributeDecoder) error {
						for nd.Next() {
							switch nd.Type() {
							case unix.NFTA_EXPR_NAME:
								e.name = nd.String()
							case unix.NFTA_EXPR_DATA:
								nd.Nested(func(xd *netlink.AttributeDecoder) error {
									for xd.Next() {
										e.attrs = append(e.attrs, kAttr{typ: xd.Type(), data: xd.Bytes()})
									}
									return nil
								})
							}
						}
						return nil
					})
					r.exprs = append(r.exprs, e)
				}
				return nil
			})
		}
	}
	return r, ad.Err()
}

// objKinds names the stateful object types as nft does.
var objKinds = map[uint32]string{1: "counter", 2: "quota", 3: "ct helper", 4: "limit", 5: "connlimit",
	6: "tunnel", 7: "ct timeout", 8: "secmark", 9: "ct expectation", 10: "synproxy"}

func parseObj(m netlink.Message) (kObj, error) {
	fam, b, err := body(m)
	if err != nil {
		return kObj{}, err
	}
	o := kObj{family: fam}
	ad, err := decoder(b)
	if err != nil {
		return o, err
	}
	var data []byte
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_OBJ_TABLE:
			o.table = ad.String()
		case unix.NFTA_OBJ_NAME:
			o.name = ad.String()
		case nftaObjHandle:
			o.handle = ad.Uint64()
		case unix.NFTA_OBJ_TYPE:
			t := ad.Uint32()
			o.kind = objKinds[t]
			if o.kind == "" {
				o.kind = fmt.Sprintf("object type %d", t)
			}
		case unix.NFTA_OBJ_DATA:
			data = ad.Bytes()
		}
	}
	if o.kind == "counter" && data != nil {
		cd, err := decoder(data)
		if err == nil {
			for cd.Next() {
				switch cd.Type() {
				case unix.NFTA_COUNTER_BYTES:
					o.bytes = cd.Uint64()
				case unix.NFTA_COUNTER_PACKETS:
					o.packets = cd.Uint64()
				}
			}
		}
	}
	return o, ad.Err()
}

func parseFlowtable(m netlink.Message) (kObj, error) {
	fam, b, err := body(m)
	if err != nil {
		return kObj{}, err
	}
	o := kObj{family: fam, kind: "flowtable"}
	ad, err := decoder(b)
	if err != nil {
		return o, err
	}
	for ad.Next() {
		switch ad.Type() {
		case nftaFlowtableTable:
			o.table = ad.String()
		case nftaFlowtableName:
			o.name = ad.String()
		case nftaFlowtableHandle:
			o.handle = ad.Uint64()
		}
	}
	return o, ad.Err()
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
