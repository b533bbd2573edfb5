package nftables

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseText: no input makes the text reader panic.
func FuzzParseText(f *testing.F) {
	for _, p := range []string{"../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.txt", "testdata/text-forms.nft", "testdata/kernel-forms.nft"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 0 && b[0] != '{' {
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = parseText("fuzz", b)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("no answer in 5s for %q", b)
			}
		}
	})
}

// TestTextMutations: damaged text (bytes changed, removed, cut) is read or
// refused, without a panic and in bounded time.
func TestTextMutations(t *testing.T) {
	b, err := os.ReadFile("testdata/text-forms.nft")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		m := slices.Clone(b)
		for k := 0; k < 1+rng.Intn(4) && len(m) > 1; k++ {
			switch j := rng.Intn(len(m)); rng.Intn(3) {
			case 0:
				m[j] = byte(rng.Intn(128))
			case 1:
				m = slices.Delete(m, j, j+1)
			default:
				m = m[:j]
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = parseText("mutated", m)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer in 5s for:\n%s", m)
		}
	}
}

// TestTextElided: a paste that leaves parts out ("....", "...") and ends
// inside its table is read as far as it goes, with a note for each gap.
func TestTextElided(t *testing.T) {
	text := `# nft -a list table ip kube-proxy
table ip kube-proxy { # handle 18
	comment "rules for kube-proxy"
	set cluster-ips { # handle 39
		type ipv4_addr
		elements = { 10.96.0.1, ..., 10.96.0.10 }
	}

	chain service-2QRHZV4L-default/kubernetes/tcp/https { # handle 55
		ip daddr 10.96.0.1 tcp dport 443 ip saddr != 10.244.0.0/16 jump mark-for-masquerade # handle 56
		numgen random mod 1 vmap { 0 : goto endpoint-X-default/kubernetes/tcp/https__192.0.2.16/6443 } # handle 58
		...
	}
....
`
	rs, err := Parse("elided.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tb := rs.Tables[0]
	if len(tb.Sets[0].Elements) != 2 || len(tb.Chains) != 1 || len(tb.Chains[0].Rules) != 2 || tb.Chains[0].Rules[1].Handle != 58 {
		t.Fatalf("read %s", textCanonical(rs))
	}
	notes := fmt.Sprint(rs.Notes)
	for _, want := range []string{"line 6:", "line 12:", "line 14:"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	if _, err := Parse("cut.nft", []byte("table ip kube-proxy {\n\tchain services {\n")); err == nil || !strings.Contains(err.Error(), "input ends inside chain services") {
		t.Errorf("a cut text without an elision: got %v", err)
	}
}
