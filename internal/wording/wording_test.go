package wording

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 pods", 1: "1 pod", 2: "2 pods"} {
		if got := Count(n, "pod", "pods"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int]string{1: "1 byte", 900: "900 bytes", 1536: "1.5 KiB", 3 << 20: "3.0 MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAnd(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"pod"}, "pod"}, {[]string{"pod", "node"}, "pod and node"}, {[]string{"pod", "node", "external"}, "pod, node and external"}} {
		if got := And(c.in); got != c.want {
			t.Errorf("And(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFirstN(t *testing.T) {
	list := []string{"a", "b", "c", "d"}
	if got := FirstN(list, 4); len(got) != 4 {
		t.Errorf("FirstN of 4 by 4 = %q", got)
	}
	if got := FirstN(list, 2); len(got) != 3 || got[2] != "... 2 more" || list[2] != "c" {
		t.Errorf("FirstN of 4 by 2 = %q (list now %q)", got, list)
	}
}
