package iptables

import (
	"errors"
	"unsafe"

	"github.com/svctrace/svctrace/internal/wire"
)

// The digest's encoding is internal/wire's, with the tables' records
// (digest_table.go).

// digestMagic starts every digest; digestVersion is the layout's version.
// A digest of another version is not read (the dump is then scanned).
const (
	digestMagic   = "svctrace iptables digest\n"
	digestVersion = 2
)

// wireWriter writes a digest of text.
type wireWriter struct {
	wire.Writer
	text string
}

// offsetIn is where part starts in whole, when part's bytes are whole's.
func offsetIn(whole, part string) (int, bool) {
	if part == "" || whole == "" {
		return 0, false
	}
	w, p := uintptr(unsafe.Pointer(unsafe.StringData(whole))), uintptr(unsafe.Pointer(unsafe.StringData(part)))
	if p < w || p-w > uintptr(len(whole)) || uintptr(len(part)) > uintptr(len(whole))-(p-w) {
		return 0, false
	}
	return int(p - w), true
}

// errDigest is a digest that cannot be read: damaged, or not this dump's.
var errDigest = errors.New("damaged digest")

// wireReader reads a digest of text; a failure wraps errDigest.
type wireReader struct {
	wire.Reader
	text string
}

func newWireReader(data []byte, text string) *wireReader {
	return &wireReader{Reader: wire.Reader{Buf: data, Damaged: errDigest}, text: text}
}
