package textfmt_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/locktui/locktui/internal/textfmt"
)

var countTests = []struct {
	n    int
	want string
}{
	{0, "0"},
	{999, "999"},
	{1000, "1,000"},
	{100000, "100,000"},
	{1234567, "1,234,567"},
	{-1234, "-1,234"},
	{-100, "-100"},
}

func TestCount(t *testing.T) {
	for _, tt := range countTests {
		if got := textfmt.Count(tt.n); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	// The smallest int has no positive counterpart: it is formatted, not negated.
	if got, want := textfmt.Count(math.MinInt), strconv.Itoa(math.MinInt); strings.ReplaceAll(got, ",", "") != want {
		t.Errorf("Count(math.MinInt) = %q, want %s with separators", got, want)
	}
}
