package ipvs

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// attrs marshals netlink attributes as the kernel sends them (host byte
// order), failing the test on error.
func attrs(t *testing.T, as ...netlink.Attribute) []byte {
	t.Helper()
	b, err := netlink.MarshalAttributes(as)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// TestDigestRecords: the records a digest is made of leave out what
// traffic and time move (a virtual server's statistics; a real server's
// connection counts and statistics; an ipset's counts, a member's
// counters and remaining timeout) and keep the configuration beside it.
func TestDigestRecords(t *testing.T) {
	addr := netlink.Attribute{Type: svcAddr, Data: []byte{10, 96, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}
	service := func(sched string, packets uint32) []byte {
		stats := attrs(t, netlink.Attribute{Type: 1, Data: u32(packets)}, netlink.Attribute{Type: 2, Data: u32(packets * 60)})
		return attrs(t, netlink.Attribute{Type: svcAF, Data: []byte{2, 0}}, netlink.Attribute{Type: svcProtocol, Data: []byte{6, 0}}, addr,
			netlink.Attribute{Type: svcPort, Data: []byte{0, 80}}, netlink.Attribute{Type: svcSched, Data: append([]byte(sched), 0)},
			netlink.Attribute{Type: svcFlags, Data: append(u32(2), u32(^uint32(0))...)}, netlink.Attribute{Type: svcTimeout, Data: u32(0)},
			netlink.Attribute{Type: svcStats | netlink.Nested, Data: stats}, netlink.Attribute{Type: svcStats64 | netlink.Nested, Data: stats})
	}
	svcRec := func(sched string, packets uint32) []byte {
		rec, id, err := serviceRecord(service(sched, packets))
		if err != nil {
			t.Fatal(err)
		}
		if want := attrs(t, netlink.Attribute{Type: svcAF, Data: []byte{2, 0}}, netlink.Attribute{Type: svcProtocol, Data: []byte{6, 0}}, addr,
			netlink.Attribute{Type: svcPort, Data: []byte{0, 80}}); !bytes.Equal(id, want) {
			t.Errorf("the virtual server's name in a request: %x, want %x", id, want)
		}
		return rec
	}
	if !bytes.Equal(svcRec("rr", 0), svcRec("rr", 12345)) {
		t.Error("a virtual server's statistics are in its record")
	}
	if bytes.Equal(svcRec("rr", 0), svcRec("wrr", 0)) {
		t.Error("a virtual server's scheduler is not in its record")
	}

	real := func(ip byte, weight, active, inactive uint32) []byte {
		stats := attrs(t, netlink.Attribute{Type: 1, Data: u32(active * 7)})
		b := attrs(t, netlink.Attribute{Type: dstAddr, Data: []byte{10, 244, 1, ip, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
			netlink.Attribute{Type: dstPort, Data: []byte{0x1f, 0x90}}, netlink.Attribute{Type: dstFwd, Data: u32(0)},
			netlink.Attribute{Type: dstWeight, Data: u32(weight)}, netlink.Attribute{Type: 5, Data: u32(0)}, netlink.Attribute{Type: 6, Data: u32(0)},
			netlink.Attribute{Type: dstActive, Data: u32(active)}, netlink.Attribute{Type: dstInactive, Data: u32(inactive)},
			netlink.Attribute{Type: dstPersistent, Data: u32(inactive)}, netlink.Attribute{Type: dstStats | netlink.Nested, Data: stats},
			netlink.Attribute{Type: dstAF, Data: []byte{2, 0}}, netlink.Attribute{Type: dstStats64 | netlink.Nested, Data: stats})
		msg := genetlinkMessage(attrs(t, netlink.Attribute{Type: ipvsnetlink.AttrDest | netlink.Nested, Data: b}))
		recs, err := realRecords(nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		return recs[0]
	}
	if !bytes.Equal(real(5, 1, 0, 0), real(5, 1, 3, 9)) {
		t.Error("a real server's connection counts or statistics are in its record")
	}
	if bytes.Equal(real(5, 1, 0, 0), real(5, 2, 0, 0)) {
		t.Error("a real server's weight is not in its record")
	}
	if bytes.Equal(real(5, 1, 0, 0), real(6, 1, 0, 0)) {
		t.Error("a real server's address is not in its record")
	}
	// Two real servers in either order make one record.
	a, b := real(5, 1, 0, 0), real(6, 1, 0, 0)
	if !bytes.Equal(sortedRecords(nil, [][]byte{a, b}), sortedRecords(nil, [][]byte{b, a})) {
		t.Error("the real servers' order is in the record")
	}

	set := func(elements uint32, members ...[]byte) []byte {
		var adt []netlink.Attribute
		for _, m := range members {
			adt = append(adt, netlink.Attribute{Type: ipsetAttrData | netlink.Nested, Data: m})
		}
		head := attrs(t, netlink.Attribute{Type: 18, Data: u32(1024)}, netlink.Attribute{Type: 19, Data: u32(65536)},
			netlink.Attribute{Type: ipsetAttrReferences, Data: u32(elements % 3)}, netlink.Attribute{Type: ipsetAttrMemSize, Data: u32(400 + elements*16)},
			netlink.Attribute{Type: ipsetAttrElements, Data: u32(elements)})
		var p ipsetParts
		if err := p.add(attrs(t, netlink.Attribute{Type: ipsetAttrProtocol, Data: []byte{6}}, netlink.Attribute{Type: ipsetAttrSetName, Data: []byte("KUBE-CLUSTER-IP\x00")},
			netlink.Attribute{Type: 3, Data: []byte("hash:ip,port\x00")}, netlink.Attribute{Type: 5, Data: []byte{2}}, netlink.Attribute{Type: 4, Data: []byte{1}},
			netlink.Attribute{Type: ipsetAttrData | netlink.Nested, Data: head}, netlink.Attribute{Type: ipsetAttrADT | netlink.Nested, Data: attrs(t, adt...)})); err != nil {
			t.Fatal(err)
		}
		return p.records()[0]
	}
	member := func(ip byte, port uint16, packets uint32) []byte {
		return attrs(t, netlink.Attribute{Type: 1 | netlink.Nested, Data: attrs(t, netlink.Attribute{Type: 1 | netlink.NetByteOrder, Data: []byte{10, 96, 0, ip}})},
			netlink.Attribute{Type: 4 | netlink.NetByteOrder, Data: binary.BigEndian.AppendUint16(nil, port)}, netlink.Attribute{Type: 7, Data: []byte{6}},
			netlink.Attribute{Type: ipsetAttrTimeout | netlink.NetByteOrder, Data: u32(packets % 100)},
			netlink.Attribute{Type: ipsetAttrBytes | netlink.NetByteOrder, Data: u32(packets * 60)}, netlink.Attribute{Type: ipsetAttrPackets | netlink.NetByteOrder, Data: u32(packets)})
	}
	if !bytes.Equal(set(2, member(10, 80, 0), member(11, 80, 0)), set(5, member(11, 80, 42), member(10, 80, 7))) {
		t.Error("an ipset's counts, its members' counters or timeouts, or their order are in its record")
	}
	if bytes.Equal(set(2, member(10, 80, 0), member(11, 80, 0)), set(2, member(10, 80, 0), member(12, 80, 0))) ||
		bytes.Equal(set(1, member(10, 80, 0)), set(1, member(10, 81, 0))) || bytes.Equal(set(1, member(10, 80, 0)), set(2, member(10, 80, 0), member(11, 80, 0))) {
		t.Error("an ipset's members are not in its record")
	}
}

// TestDigestReplay takes the IPVS table's records from a recording of the
// VM lab's kernel (ipvs-render: the virtual and real servers of the render
// of testView): a record per virtual server, asking for each one's real
// servers exactly as the read does.
func TestDigestReplay(t *testing.T) {
	p := load(t, filepath.Join(recordDir, "ipvs-render.rec"))
	c, err := ipvsnetlink.OpenIPVS(p)
	if err != nil || c == nil {
		t.Fatalf("no IPVS in the recording: %v", err)
	}
	defer c.Close()
	msgs, err := c.Services()
	if err != nil {
		t.Fatal(err)
	}
	recs, err := virtualRecords(c, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(msgs) || len(recs) == 0 {
		t.Errorf("%d records of %d virtual servers", len(recs), len(msgs))
	}
	if err := p.Done(); err != nil {
		t.Error(err)
	}
}

// genetlinkMessage is a dump's reply of one message holding data.
func genetlinkMessage(data []byte) []genetlink.Message {
	return []genetlink.Message{{Data: data}}
}
