package ipvs

import (
	"fmt"
	"strings"
)

// A table pasted in a ticket may have addresses its author hid
// ("<ipv4-public-prefix>.20:3129", "10.x.x.5:80", "***:443"). The reader
// keeps what the rest of the table says: a virtual server whose address
// is hidden is no frontend (its address is not known), and is said in a
// note with its real servers; a real server whose address is hidden is
// kept as one whose address is not known, so that its share goes to a
// backend the table does not show, never to a made-up one. A table with
// redactions is not checked for drift (Plane.Unchecked).

// redacted says whether an ADDRESS:PORT field was hidden by the dump's
// author: a placeholder in angle brackets, stars, or x's for numbers.
func redacted(s string) bool {
	if strings.ContainsAny(s, "<>*") {
		return true
	}
	host := s
	if i := strings.LastIndexByte(s, ':'); i > 0 && !strings.HasPrefix(s, "[") {
		host = s[:i]
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return false
	}
	xs := false
	for _, p := range parts {
		switch {
		case p != "" && strings.Trim(p, "xX") == "":
			xs = true
		case p == "" || strings.Trim(p, "0123456789") != "":
			return false
		}
	}
	return xs
}

// redactedVirtual is the note of a virtual server whose address is
// hidden: it and the real servers under it are left out.
func redactedVirtual(proto, addr string, n int) string {
	return fmt.Sprintf("line %d: virtual server %s %s: its address was redacted by the dump's author, so it is no frontend here; it and the real servers listed under it are left out", n, proto, addr)
}

// redactedReal is the note of a real server whose address is hidden.
func redactedReal(v *Virtual, addr string, n int) string {
	return fmt.Sprintf("line %d: a real server of %s: its address (%s) was redacted by the dump's author: its share goes to a backend that is not known", n, v.Key(), addr)
}

// redactions counts the table's hidden addresses: a virtual server's
// (its notes) and its real servers'.
func (t *Table) redactions() int {
	n := t.hidden
	for _, v := range t.Virtuals {
		for _, r := range v.Reals {
			if r.Redacted {
				n++
			}
		}
	}
	return n
}
