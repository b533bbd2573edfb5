package inspect

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestDumpOutput: what is written or read in, in pieces of any size, comes
// out whole and in order, across chunks.
func TestDumpOutput(t *testing.T) {
	var want strings.Builder
	for i := 0; want.Len() < 3*lastChunk+12345; i++ {
		want.WriteString("-A KUBE-SEP-XYZ -m comment --comment \"ns/svc:http\" -j DNAT --to-destination 10.244.1.")
		want.WriteByte(byte('0' + i%10))
		want.WriteByte('\n')
	}
	text := want.String()
	var w dumpOutput
	for rest := text; rest != ""; {
		n := min(len(rest), 1+len(rest)%70001)
		w.Write([]byte(rest[:n]))
		rest = rest[n:]
	}
	if w.String() != text {
		t.Error("written in pieces: the output differs")
	}
	var r dumpOutput
	n, err := r.ReadFrom(iotest.HalfReader(strings.NewReader(text)))
	if err != nil || n != int64(len(text)) || r.String() != text {
		t.Errorf("read: %d bytes, %v; the output differs: %v", n, err, r.String() != text)
	}
	var e dumpOutput
	if _, err := e.ReadFrom(iotest.ErrReader(io.ErrUnexpectedEOF)); err != io.ErrUnexpectedEOF || e.String() != "" {
		t.Errorf("a failing read: %v, %q", err, e.String())
	}
	var empty dumpOutput
	if _, err := io.Copy(&empty, bytes.NewReader(nil)); err != nil || empty.String() != "" {
		t.Errorf("nothing read: %v, %q", err, empty.String())
	}
}
