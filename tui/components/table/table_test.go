package table_test

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
)

func TestVirtualScrolling(t *testing.T) {
	c := common.New(false, true)
	tb := table.New(c, []table.Column{{Title: "N", Width: 6}, {Title: "NAME", Width: 4, Flex: 1}})
	tb.SetSize(30, 6) // header + 5 rows
	tb.SetRows(1000000)
	asked := map[int]bool{}
	cells := func(i int) []table.Cell {
		asked[i] = true
		return []table.Cell{{Text: fmt.Sprint(i)}, {Text: strings.Repeat("x", 50)}}
	}
	out := ansi.Strip(tb.View(cells, ""))
	if len(asked) != 5 {
		t.Fatalf("View asked for %d rows, want the 5 on screen", len(asked))
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 6 {
		t.Fatalf("View rendered %d lines, want 6", len(lines))
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 30 {
			t.Fatalf("line %q is %d wide, want at most 30", l, w)
		}
	}
	tb.Update(tea.KeyPressMsg{Code: 'G', Text: "G"})
	if from, to := tb.Window(); tb.Cursor() != 999999 || from != 999995 || to != 1000000 {
		t.Fatalf("after G: cursor %d window [%d,%d), want 999999 [999995,1000000)", tb.Cursor(), from, to)
	}
	tb.Update(tea.KeyPressMsg{Code: 'k', Text: "k"})
	tb.SetRows(10)
	if tb.Cursor() != 9 {
		t.Fatalf("after shrinking to 10 rows: cursor %d, want 9", tb.Cursor())
	}
	tb.SetRows(0)
	if out := ansi.Strip(tb.View(cells, "nothing here")); !strings.Contains(out, "nothing here") {
		t.Fatalf("empty table shows %q, want the empty message", out)
	}
}
