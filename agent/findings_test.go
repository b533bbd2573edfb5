package agent

import (
	"testing"
	"time"

	"github.com/svctrace/svctrace/behavior"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestServiceOf(t *testing.T) {
	for in, want := range map[string]string{"shop/cart:http": "shop/cart", "shop/cart": "shop/cart", "": ""} {
		if got := serviceOf(behavior.Finding{Service: in}); got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
