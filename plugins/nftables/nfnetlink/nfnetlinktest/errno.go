package nfnetlinktest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// errnoName is how a recording names a socket's error: the errno's name
// (ENOBUFS), or, for an error that is no errno, "errno 0" and its text.
func errnoName(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return "errno 0 " + err.Error()
	}
	if name := errnoNameOf(e); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// errnoValue is the error a recording names.
func errnoValue(name string) error {
	if n, ok := strings.CutPrefix(name, "errno "); ok {
		num, text, _ := strings.Cut(n, " ")
		if v, err := strconv.Atoi(num); err == nil && v != 0 {
			return syscall.Errno(v)
		}
		return fmt.Errorf("recorded error: %s", text)
	}
	if e := errnoOf(name); e != 0 {
		return e
	}
	return fmt.Errorf("recorded error %s", name)
}
