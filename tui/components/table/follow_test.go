package table_test

import (
	"slices"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
)

func TestSelectionFollowsItsRow(t *testing.T) {
	tb := table.New(common.New(false, true), []table.Column{{Title: "KEY", Width: 10}})
	tb.SetSize(20, 10)
	var sel table.Selection
	rows := []string{"a", "b", "c", "d"}
	idAt := func(i int) string { return rows[i] }

	sel.SetRows(tb, len(rows), idAt, nil)
	if sel.ID() != "a" || tb.Cursor() != 0 {
		t.Fatalf("first view: selected %q at %d, want \"a\" at 0", sel.ID(), tb.Cursor())
	}
	sel.Update(tb, tea.KeyPressMsg{Code: tea.KeyDown}, len(rows), idAt)
	sel.Update(tb, tea.KeyPressMsg{Code: tea.KeyDown}, len(rows), idAt)
	if sel.ID() != "c" {
		t.Fatalf("after two downs: selected %q, want \"c\"", sel.ID())
	}

	// Re-sorted: the cursor follows "c" (scan and index lookups alike).
	rows = []string{"d", "c", "b", "a"}
	sel.SetRows(tb, len(rows), idAt, nil)
	if tb.Cursor() != 1 {
		t.Fatalf("after re-sort: cursor %d, want 1 (row \"c\")", tb.Cursor())
	}
	rows = []string{"c", "d", "b", "a"}
	sel.SetRows(tb, len(rows), idAt, func(id string) int { return slices.Index(rows, id) })
	if tb.Cursor() != 0 {
		t.Fatalf("with an index: cursor %d, want 0 (row \"c\")", tb.Cursor())
	}

	// The selected row is gone: the row under the cursor becomes the selection.
	rows = []string{"x", "y"}
	sel.SetRows(tb, len(rows), idAt, nil)
	if sel.ID() != "x" {
		t.Fatalf("after the row went away: selected %q, want \"x\"", sel.ID())
	}

	// No rows: the selection is kept for when its row comes back.
	rows = nil
	sel.SetRows(tb, 0, idAt, nil)
	if sel.ID() != "x" {
		t.Fatalf("with no rows: selected %q, want \"x\" kept", sel.ID())
	}
}
