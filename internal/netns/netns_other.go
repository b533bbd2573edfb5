//go:build !linux

package netns

import "errors"

// Run needs Linux.
func Run(string, func() error) error {
	return errors.New("network namespaces need Linux")
}
