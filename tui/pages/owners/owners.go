// Package owners is the owners page: who holds how many locks, since when, and of which kind
// (execute, named, anonymous "*").
package owners

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
	"github.com/locktui/locktui/tui/store"
)

// Page is the owners table.
type Page struct {
	common   *common.Common
	table    *table.Model
	view     *store.View
	selected table.Selection
	empty    string
}

// New returns the owners page.
func New(c *common.Common) *Page {
	cols := []table.Column{
		{Title: "KEYS", Width: 7, Right: true},
		{Title: "OWNER", Width: 12, Flex: 3, Middle: true},
		{Title: "KIND", Width: 9},
		{Title: "OLDEST", Width: 7, Right: true},
		{Title: "OLDEST KEY", Width: 10, Flex: 2, Middle: true},
	}
	return &Page{common: c, table: table.New(c, cols), empty: "loading…"}
}

// sortToColumn maps the owners sort columns to table columns.
var sortToColumn = [...]int{store.OwnerByKeys: 0, store.OwnerByOwner: 1, store.OwnerByKind: 2, store.OwnerByOldest: 3}

// SetSize sets the page size.
func (p *Page) SetSize(width, height int) { p.table.SetSize(width, height) }

// SetView shows v, keeping the selected owner under the cursor.
func (p *Page) SetView(v *store.View) {
	p.view = v
	s := v.Query.OwnerSort
	p.table.SetSorted(sortToColumn[s.Column%len(sortToColumn)], s.Reverse)
	p.selected.SetRows(p.table, len(v.Owners), p.ownerAt, nil)
	if len(v.Owners) == 0 {
		p.empty = "no owners"
		if v.Query.Filter != "" {
			p.empty = fmt.Sprintf("no owners match /%s", v.Query.Filter)
		}
	}
}

func (p *Page) ownerAt(i int) string { return p.view.Owners[i].Owner }

// Update moves the cursor.
func (p *Page) Update(msg tea.Msg) tea.Cmd {
	if p.view != nil {
		p.selected.Update(p.table, msg, len(p.view.Owners), p.ownerAt)
	}
	return nil
}

// Selected returns the owner under the cursor.
func (p *Page) Selected() (store.OwnerRow, bool) {
	if p.view == nil || len(p.view.Owners) == 0 {
		return store.OwnerRow{}, false
	}
	return p.view.Owners[p.table.Cursor()], true
}

// Counting reports whether the page changes with time alone: the age of the oldest locks.
func (p *Page) Counting() bool { return false }

// View renders the rows on screen.
func (p *Page) View() string {
	now := p.common.Now()
	st := p.common.Styles
	return p.table.View(func(i int) []table.Cell {
		o := p.view.Owners[i]
		return []table.Cell{
			{Text: common.Count(o.Keys), Style: st.Row},
			{Text: provider.Printable(o.Owner), Style: st.Row},
			{Text: o.Kind, Style: st.Dim},
			{Text: common.Duration(now.Sub(o.Oldest)), Style: st.Row},
			{Text: provider.Printable(o.OldestKey), Style: st.Dim},
		}
	}, p.empty)
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Filter, k.Enter, k.ReleaseAll, k.Sort}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
