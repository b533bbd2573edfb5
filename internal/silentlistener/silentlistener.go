// Package silentlistener is a TCP server that takes connections and never
// answers: an agent whose node is up and whose API hangs, for the tests
// and the fleet benchmark of the CLI's unreachable-agent handling.
package silentlistener

import (
	"context"
	"fmt"
	"net"
)

// Listen listens on address and holds every connection it takes, without
// a byte in answer, until ctx ends; it returns the address it listens on.
func Listen(ctx context.Context, address string) (net.Addr, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("the silent listener: %w", err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr(), nil
}
