//go:build !linux

package ipvsnetlink

import "errors"

// Dial: netlink is Linux's.
func (Kernel) Dial(int) (Socket, error) {
	return nil, errors.New("netlink is Linux's")
}
