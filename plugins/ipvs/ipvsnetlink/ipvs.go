package ipvsnetlink

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// IPVS's generic netlink commands and attributes (include/uapi/linux/ip_vs.h).
const (
	cmdGetService = 4
	cmdGetDest    = 8

	// AttrService is the nested attribute of a virtual server, in a
	// reply to Services and in a request of Dests.
	AttrService = 1
	// AttrDest is the nested attribute of a real server, in a reply to
	// Dests.
	AttrDest = 2
)

// IPVS is a generic netlink connection with the IPVS family looked up.
type IPVS struct {
	c   *genetlink.Conn
	fam genetlink.Family
}

// OpenIPVS looks the IPVS family up over a generic netlink socket of d;
// nil, and no error, when the kernel has no IPVS (the module is not
// loaded: nothing loads it).
func OpenIPVS(d Dialer) (*IPVS, error) {
	nc, err := dial(d, ProtoGeneric)
	if err != nil {
		return nil, fmt.Errorf("opening generic netlink: %w", err)
	}
	c := genetlink.NewConn(nc)
	fam, err := c.GetFamily("IPVS")
	if errors.Is(err, os.ErrNotExist) {
		c.Close()
		return nil, nil
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("looking up IPVS over netlink: %w", err)
	}
	return &IPVS{c: c, fam: fam}, nil
}

// Close closes the socket.
func (v *IPVS) Close() error { return v.c.Close() }

// Services dumps the virtual servers: each message's data holds an
// AttrService.
func (v *IPVS) Services() ([]genetlink.Message, error) {
	return v.dump(cmdGetService, nil)
}

// Dests dumps the real servers of the virtual server that service (the
// attributes that name it: address family, protocol, address and port,
// or firewall mark) names: each message's data holds an AttrDest.
func (v *IPVS) Dests(service []byte) ([]genetlink.Message, error) {
	req, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: AttrService | netlink.Nested, Data: service}})
	if err != nil {
		return nil, fmt.Errorf("asking for real servers: %w", err)
	}
	return v.dump(cmdGetDest, req)
}

func (v *IPVS) dump(cmd uint8, data []byte) ([]genetlink.Message, error) {
	m := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: v.fam.Version}, Data: data}
	return v.c.Execute(m, v.fam.ID, netlink.Request|netlink.Dump)
}
