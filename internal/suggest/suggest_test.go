package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestClose(t *testing.T) {
	names := []string{"web", "web-np", "web-lb", "nginx", "kube-dns", "cart", "sticky"}
	for _, c := range []struct {
		word string
		want []string
	}{
		{"wbe", []string{"web"}},
		{"ngnix", []string{"nginx"}},
		{"kubedns", []string{"kube-dns"}},
		{"dns", []string{"kube-dns"}},
		{"zzzzzz", nil},
		{"web", []string{"web-lb", "web-np"}},
	} {
		if got := Close(c.word, names, 5); !slices.Equal(got, c.want) {
			t.Errorf("Close(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := Close("wbe", names, 1); !slices.Equal(got, []string{"web"}) {
		t.Errorf("Close with max 1 = %q", got)
	}
}

func TestHint(t *testing.T) {
	if h := Hint("ngnix", []string{"nginx", "cart"}, "Services"); h != "did you mean nginx?" {
		t.Errorf("hint = %q", h)
	}
	if h := Hint("zzz", []string{"nginx", "cart"}, "Services"); h != "Services: cart, nginx" {
		t.Errorf("hint = %q", h)
	}
	if h := Hint("zzz", nil, "Services"); h != "there are no Services" {
		t.Errorf("hint = %q", h)
	}
	var many []string
	for i := 0; i < 20; i++ {
		many = append(many, strings.Repeat("q", i+5))
	}
	if h := Hint("a", many, "nodes"); !strings.Contains(h, "(20 in all)") {
		t.Errorf("hint = %q", h)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"node1", "ndoe1", 1}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
