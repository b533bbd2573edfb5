// Package kernelrec keeps conversations with the kernel (netlink requests
// and the datagrams that answered them, or getsockopt calls and the
// buffers they filled) in files, so that a reader of the kernel can be
// tested without root against what a real kernel said.
//
// A test that has root records: it wraps the real socket, talks to a
// network namespace of its own, and writes the recording beside the
// tool's own dump of the same state (nft -j, iptables-save, ipvsadm,
// conntrack -L). Every other run plays the recording back through the
// reader's seam and compares what the reader makes of it with that dump.
// The file names the kernel and the tools that made it.
//
// The format is text: a header of "# " lines (the note), then one block
// per exchange:
//
//	> base64 of the request
//	< base64 of one reply datagram (or buffer)
//	< ...
//	! an error the kernel answered instead (an errno name), if any
//
// with long base64 values wrapped over "+ " continuation lines.
package kernelrec

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exchange is one request and the kernel's answer to it.
type Exchange struct {
	// Request is the bytes sent (a netlink message, or a getsockopt
	// call's input buffer, as the seam defines it).
	Request []byte
	// Replies are the datagrams (or buffers) the kernel answered with, in
	// order.
	Replies [][]byte
	// Err is the errno name the kernel answered instead, if any.
	Err string
}

// Recording is a conversation with a note of where it came from.
type Recording struct {
	// Note says what made the recording: the kernel, the tools, the
	// ruleset or state loaded. One line per entry.
	Note      []string
	Exchanges []Exchange
}

// wrap is the width of a base64 line.
const wrap = 96

// Write saves r to path.
func (r *Recording) Write(path string) error {
	var b bytes.Buffer
	for _, n := range r.Note {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	put := func(mark string, data []byte) {
		s := base64.StdEncoding.EncodeToString(data)
		first := true
		for first || s != "" {
			n := min(wrap, len(s))
			if first {
				fmt.Fprintf(&b, "%s %s\n", mark, s[:n])
			} else {
				fmt.Fprintf(&b, "+ %s\n", s[:n])
			}
			s, first = s[n:], false
		}
	}
	for _, e := range r.Exchanges {
		put(">", e.Request)
		for _, rep := range e.Replies {
			put("<", rep)
		}
		if e.Err != "" {
			fmt.Fprintf(&b, "! %s\n", e.Err)
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Read loads a recording from path; a malformed file is an error naming
// the line.
func Read(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Parse reads a recording.
func Parse(in io.Reader) (*Recording, error) {
	r := &Recording{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var cur *[]byte // the value continuation lines extend
	var text strings.Builder
	flush := func() error {
		if cur == nil {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(text.String())
		if err != nil {
			return err
		}
		*cur = b
		cur = nil
		text.Reset()
		return nil
	}
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		mark, val, _ := strings.Cut(l, " ")
		if mark != "+" {
			if err := flush(); err != nil {
				return nil, fmt.Errorf("line %d: %w", line-1, err)
			}
		}
		switch mark {
		case "#":
			if len(r.Exchanges) > 0 {
				return nil, fmt.Errorf("line %d: a note after the first exchange", line)
			}
			r.Note = append(r.Note, val)
		case ">":
			r.Exchanges = append(r.Exchanges, Exchange{})
			cur = &r.Exchanges[len(r.Exchanges)-1].Request
			text.WriteString(val)
		case "<", "!":
			if len(r.Exchanges) == 0 {
				return nil, fmt.Errorf("line %d: an answer before any request", line)
			}
			e := &r.Exchanges[len(r.Exchanges)-1]
			if mark == "!" {
				e.Err = val
				continue
			}
			e.Replies = append(e.Replies, nil)
			cur = &e.Replies[len(e.Replies)-1]
			text.WriteString(val)
		case "+":
			if cur == nil {
				return nil, fmt.Errorf("line %d: a continuation of nothing", line)
			}
			text.WriteString(val)
		case "":
			if l != "" {
				return nil, fmt.Errorf("line %d: %q is not a recording line", line, l)
			}
		default:
			return nil, fmt.Errorf("line %d: %q is not a recording line", line, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	return r, nil
}
