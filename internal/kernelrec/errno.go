package kernelrec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// An exchange's Err names the error the kernel answered with: the
// errno's name (ENOBUFS), "errno N" for one without a name here, or
// "errno 0 TEXT" for an error that is no errno (a transport's own).

// ErrName is how a recording names err.
func ErrName(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return "errno 0 " + err.Error()
	}
	if name := errnoName(e); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// Err is the error a recording names: the errno, or an error of its text.
func Err(name string) error {
	if n, ok := strings.CutPrefix(name, "errno "); ok {
		num, text, _ := strings.Cut(n, " ")
		if v, err := strconv.Atoi(num); err == nil && v != 0 {
			return syscall.Errno(v)
		}
		return fmt.Errorf("recorded error: %s", text)
	}
	for e := syscall.Errno(1); e < 4096; e++ {
		if errnoName(e) == name {
			return e
		}
	}
	return fmt.Errorf("recorded error %s", name)
}
