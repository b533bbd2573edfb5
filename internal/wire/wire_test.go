package wire

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var errDamaged = errors.New("damaged index")

func TestRoundTrip(t *testing.T) {
	var w Writer
	w.Uint(300)
	w.Int(-7)
	w.Str("kube-proxy")
	w.Strs([]string{"a", "", "bc"})
	w.Uint(5)
	r := Reader{Buf: w.Buf, Damaged: errDamaged}
	u, i, s, ss, n := r.Uint(), r.Int(), r.Str(), r.Strs(), r.Small(5)
	r.End()
	if r.Err != nil || u != 300 || i != -7 || s != "kube-proxy" || !slices.Equal(ss, []string{"a", "", "bc"}) || n != 5 {
		t.Errorf("read %d %d %q %q %d, err %v", u, i, s, ss, n, r.Err)
	}
}

// TestDamaged: each failure wraps Damaged, names the byte, and sticks.
func TestDamaged(t *testing.T) {
	var w Writer
	w.Str("abcdef")
	w.Uint(1 << 40)
	cases := map[string]struct {
		buf  []byte
		read func(r *Reader)
		want string
	}{
		"truncated string": {w.Buf[:4], func(r *Reader) { r.Str() }, "byte 1: a string of 6 bytes where 3 are left"},
		"truncated number": {[]byte{0x80}, func(r *Reader) { r.Uint() }, "byte 0: bad or truncated number"},
		"out of range":     {w.Buf, func(r *Reader) { r.Str(); r.Small(1000) }, "byte 13: value 1099511627776 out of range (at most 1000)"},
		"left over":        {w.Buf, func(r *Reader) { r.Str(); r.End() }, "byte 7: 6 bytes left over"},
		"sticks":           {[]byte{0x80}, func(r *Reader) { r.Uint(); r.Str(); r.End() }, "byte 0: bad or truncated number"},
	}
	for name, c := range cases {
		r := &Reader{Buf: c.buf, Damaged: errDamaged}
		c.read(r)
		if !errors.Is(r.Err, errDamaged) || !strings.HasSuffix(r.Err.Error(), c.want) {
			t.Errorf("%s: error %v, want one ending %q", name, r.Err, c.want)
		}
	}
}

// TestHeader: a header reads back against its dump; another magic, another
// version, another dump each give their error, and a header cut short is
// left in Err.
func TestHeader(t *testing.T) {
	errVersion := errors.New("index of another version")
	dump := []byte("*nat\nCOMMIT\n")
	var w Writer
	w.Header("test index\n", 2, dump)
	w.Str("after")
	r := Reader{Buf: w.Buf, Damaged: errDamaged}
	if err := r.Header("test index\n", 2, errVersion, dump, "dump"); err != nil || r.Str() != "after" || r.Err != nil {
		t.Fatalf("header: %v, %v", err, r.Err)
	}
	for name, c := range map[string]struct {
		magic   string
		version uint64
		dump    string
		want    error
		text    string
	}{
		"another magic":   {"other index\n", 2, string(dump), errDamaged, "does not start as one"},
		"another version": {"test index\n", 3, string(dump), errVersion, "(2; this svctrace reads 3)"},
		"another dump":    {"test index\n", 2, "*filter\nCOMMIT\n", errDamaged, "it is of another dump (12 bytes"},
	} {
		r := Reader{Buf: w.Buf, Damaged: errDamaged}
		err := r.Header(c.magic, c.version, errVersion, []byte(c.dump), "dump")
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v with %q", name, err, c.want, c.text)
		}
	}
	r = Reader{Buf: w.Buf[:len("test index\n")+1], Damaged: errDamaged}
	if err := r.Header("test index\n", 2, errVersion, dump, "dump"); err != nil || !errors.Is(r.Err, errDamaged) {
		t.Errorf("a header cut short: %v, Err %v", err, r.Err)
	}
}
