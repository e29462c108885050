package glob_test

import (
	"testing"

	"github.com/locktui/locktui/internal/glob"
)

// The cases follow Redis's stringmatchlen, which SCAN MATCH uses.
var matchTests = []struct {
	pattern, s string
	want       bool
}{
	{"*", "", true},
	{"*", "cart:1/x", true},
	{"cart:*", "cart:1", true},
	{"cart:*", "Cart:1", false},
	{"cart:?", "cart:12", false},
	{"cart:??", "cart:12", true},
	{"?", "é", true},
	{"cart:[13]", "cart:3", true},
	{"cart:[13]", "cart:2", false},
	{"cart:[^13]", "cart:2", true},
	{"cart:[a-c]", "cart:b", true},
	{"cart:[c-a]", "cart:b", true},
	{`cart:\*`, "cart:*", true},
	{`cart:\*`, "cart:1", false},
	{"cart:[", "cart:[", true},
	{"a*b*c", "axxbyyc", true},
	{"a*b*c", "axxbyy", false},
	{"", "", true},
	{"", "a", false},
}

func TestMatch(t *testing.T) {
	for _, tt := range matchTests {
		if got := glob.Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}
