package conntrack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// maxLine bounds one line of input; longer lines are an error.
const maxLine = 1 << 20

// noiseLine matches lines conntrack writes to stderr next to its entries,
// which users paste together with them.
const noiseLine = `^(conntrack v\S+ \(conntrack-tools\): \d+ flow entries have been shown\.|nfct_labelmap_new: .*)$`

// ParseText reads conntrack entries from the output of `conntrack -L`
// (plain, -o extended, -o id, with or without its trailing summary line) or
// from /proc/net/nf_conntrack. source names the input in errors. It returns
// at most limit entries (0: no limit) and the number of entries in the whole
// input. Blank lines are skipped; any other line that is not a whole entry
// is an error naming source and the line number, returned with the entries
// read before it. Unknown key=value fields and [FLAGS] are ignored (they
// stay in Entry.Line).
func ParseText(source string, r io.Reader, limit int) ([]Entry, int, error) {
	if limit < 0 {
		return nil, 0, fmt.Errorf("%s: negative limit %d", source, limit)
	}
	noise := regexp.MustCompile(noiseLine)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var entries []Entry
	total, lineNo := 0, 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(string(sc.Bytes()))
		if line == "" || noise.MatchString(line) {
			continue
		}
		e, err := parseLine(line)
		if err != nil {
			return entries, total, fmt.Errorf("%s:%d: %w: %q", source, lineNo, err, clip(line))
		}
		total++
		if limit == 0 || len(entries) < limit {
			entries = append(entries, e)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return entries, total, fmt.Errorf("%s:%d: line longer than %d bytes", source, lineNo+1, maxLine)
		}
		return entries, total, fmt.Errorf("%s: after line %d: %w", source, lineNo, err)
	}
	return entries, total, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// parseLine parses one entry line.
func parseLine(line string) (Entry, error) {
	e := Entry{Line: line}
	lx := lexer{s: line}
	tok, err := lx.next()
	if err != nil {
		return e, err
	}
	if tok == "ipv4" || tok == "ipv6" {
		want := "2"
		e.Family = IPv4
		if tok == "ipv6" {
			e.Family, want = IPv6, "10"
		}
		if n, err := lx.next(); err != nil || n != want {
			return e, fmt.Errorf("%s must be followed by %s", tok, want)
		}
		if tok, err = lx.next(); err != nil {
			return e, err
		}
	}
	numTok, err := lx.next()
	if err != nil {
		return e, fmt.Errorf("no protocol number after %q", tok)
	}
	num, err := strconv.ParseUint(numTok, 10, 8)
	if err != nil {
		return e, fmt.Errorf("bad protocol number %q", numTok)
	}
	proto := uint8(num)
	if name, ok := knownProto(proto); ok && tok != name || !ok && tok != "unknown" {
		return e, fmt.Errorf("protocol %q does not match number %d", tok, proto)
	}
	e.Protocol = protoName(proto)
	tmo, err := lx.next()
	if err != nil {
		return e, errors.New("no timeout")
	}
	t, err := strconv.ParseUint(tmo, 10, 32)
	if err != nil {
		return e, fmt.Errorf("bad timeout %q", tmo)
	}
	e.Timeout = uint32(t)
	var tuples [2]lineTuple
	cur := -1 // tuple being read: -1 none yet, 0 orig, 1 reply, 2 closed
	var seen fieldSet
	for {
		tok, err := lx.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return e, err
		}
		if tok[0] == '[' {
			switch tok {
			case "[UNREPLIED]":
				e.Unreplied = true
			case "[ASSURED]":
				e.Assured = true
			}
			if cur == 1 {
				cur = 2
			}
			continue
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			if cur == -1 && e.State == "" && isStateName(tok) {
				e.State = tok
				continue
			}
			return e, fmt.Errorf("unexpected token %q", tok)
		}
		if k == "src" {
			if cur >= 1 {
				return e, errors.New("more than two tuples")
			}
			cur++
		}
		if cur == 0 || cur == 1 {
			stored, err := tuples[cur].set(k, v, proto)
			if err != nil {
				return e, err
			}
			if stored {
				continue
			}
			if cur == 1 && (k == "id" || entryKey(k)) {
				cur = 2
			}
		}
		if err := setField(&e, &seen, k, v); err != nil {
			return e, err
		}
	}
	return e, finish(&e, &tuples, seen, proto)
}

// entryKey reports whether k is a field of the entry that conntrack or
// /proc write after the tuples.
func entryKey(k string) bool {
	switch k {
	case "mark", "use", "zone", "secctx", "secmark", "delta-time", "labels", "helper":
		return true
	}
	return false
}

// fieldSet records which entry-level fields a line had.
type fieldSet uint8

const (
	seenMark fieldSet = 1 << iota
	seenUse
	seenID
	seenZone
)

func isStateName(s string) bool {
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// finish checks that both tuples are whole and copies them into e.
func finish(e *Entry, tuples *[2]lineTuple, seen fieldSet, proto uint8) error {
	names := [2]string{"original", "reply"}
	for i := range tuples {
		lt := &tuples[i]
		switch {
		case !lt.src || !lt.dst:
			return fmt.Errorf("%s tuple incomplete (truncated?)", names[i])
		case hasPorts(proto) && (!lt.sport || !lt.dport):
			return fmt.Errorf("%s tuple has no sport/dport", names[i])
		case isICMP(proto) && (!lt.typ || !lt.code || !lt.id):
			return fmt.Errorf("%s tuple has no icmp type/code/id", names[i])
		case lt.packets != lt.bytes || lt.packets != tuples[0].packets:
			return fmt.Errorf("%s tuple has incomplete counters", names[i])
		case familyOf(lt.t.Src) != familyOf(lt.t.Dst) || familyOf(lt.t.Src) != familyOf(tuples[0].t.Src):
			return fmt.Errorf("%s tuple mixes address families", names[i])
		}
	}
	fam := familyOf(tuples[0].t.Src)
	if e.Family != "" && e.Family != fam {
		return fmt.Errorf("family %s with %s addresses", e.Family, fam)
	}
	if seen&seenUse == 0 {
		return errors.New("no use= field (truncated?)")
	}
	e.Family = fam
	e.Orig, e.Reply = tuples[0].t, tuples[1].t
	e.ICMP = tuples[0].icmp
	if e.Accounting = tuples[0].packets; e.Accounting {
		e.OrigPackets, e.OrigBytes = tuples[0].nPackets, tuples[0].nBytes
		e.ReplyPackets, e.ReplyBytes = tuples[1].nPackets, tuples[1].nBytes
	}
	return nil
}
