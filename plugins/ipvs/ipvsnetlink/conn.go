package ipvsnetlink

import (
	"fmt"

	"github.com/mdlayher/netlink"
)

// ProtoNetfilter is NETLINK_NETFILTER, the ipsets' protocol.
const ProtoNetfilter = 12

// Conn is a netlink connection of one protocol, for the writes: each
// request waits for the kernel's acknowledgement.
type Conn struct {
	c *netlink.Conn
}

// Open opens a connection of protocol over a socket of d.
func Open(d Dialer, protocol int) (*Conn, error) {
	c, err := dial(d, protocol)
	if err != nil {
		return nil, fmt.Errorf("opening netlink (protocol %d): %w", protocol, err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one request message, as a library serialized it (its
// sequence number and port ID are the connection's), asks for an
// acknowledgement and waits for it: an error the kernel answers is an
// error wrapping its errno.
func (c *Conn) Do(msg []byte) error {
	ms, err := Split(msg)
	if err != nil {
		return err
	}
	if len(ms) != 1 {
		return fmt.Errorf("a request of %d netlink messages, not one", len(ms))
	}
	m := ms[0]
	m.Header.Sequence, m.Header.PID = 0, 0
	m.Header.Flags |= netlink.Request | netlink.Acknowledge
	_, err = c.c.Execute(m)
	return err
}

// execute sends a request and returns its reply messages.
func (c *Conn) execute(m netlink.Message) ([]netlink.Message, error) {
	return c.c.Execute(m)
}

// Dump sends one dump request, a message of type typ with data, and
// returns the kernel's reply messages (all the parts of a multipart
// reply, without its end).
func (c *Conn) Dump(typ netlink.HeaderType, data []byte) ([]netlink.Message, error) {
	return c.c.Execute(netlink.Message{Header: netlink.Header{Type: typ, Flags: netlink.Request | netlink.Dump}, Data: data})
}
