package sparkline_test

import (
	"testing"

	"github.com/locktui/locktui/tui/components/sparkline"
)

func TestRender(t *testing.T) {
	cases := []struct {
		series []int
		width  int
		want   string
	}{
		{[]int{0, 1, 2, 4, 8}, 5, " ▁▂▄█"},
		{[]int{0, 0}, 4, "    "},
		{[]int{1, 100}, 2, "▁█"},
		{[]int{5, 1, 2}, 2, "▄█"},
		{nil, 0, ""},
	}
	for _, c := range cases {
		if got := sparkline.Render(c.series, c.width); got != c.want {
			t.Errorf("Render(%v, %d) = %q, want %q", c.series, c.width, got, c.want)
		}
	}
	if got := sparkline.Max([]int{3, 9, 1}); got != 9 {
		t.Errorf("Max = %d, want 9", got)
	}
}
