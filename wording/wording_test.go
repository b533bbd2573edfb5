package wording

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 pods", 1: "1 pod", 2: "2 pods"} {
		if got := Count(n, "pod", "pods"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
