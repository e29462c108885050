// Package hot is the hot-locks page: keys ranked by contention.
package hot

import (
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/sparkline"
	"github.com/locktui/locktui/tui/components/table"
	"github.com/locktui/locktui/tui/store"
)

// sparkWidth is the seconds of history drawn per row.
const sparkWidth = 20

// Page is the hot-locks ranking.
type Page struct {
	common   *common.Common
	table    *table.Model
	view     *store.View
	selected table.Selection
	width    int
}

// New returns the hot page.
func New(c *common.Common) *Page {
	cols := []table.Column{
		{Title: "#", Width: 3, Right: true},
		{Title: "KEY", Width: 10, Flex: 2, Middle: true},
		{Title: "HOLDER", Width: 8, Flex: 1, Middle: true},
		{Title: "WAIT", Width: 4, Right: true},
		{Title: "TRY/s", Width: 6, Right: true},
		{Title: "CONT/s", Width: 6, Right: true},
		{Title: "60s", Width: 4, Right: true},
		{Title: "LAST 20s", Width: sparkWidth},
	}
	return &Page{common: c, table: table.New(c, cols)}
}

// sortToColumn maps the hot sort columns to table columns.
var sortToColumn = [...]int{store.HotByContended: 6, store.HotByWaiters: 3, store.HotByAttempts: 4, store.HotByKey: 1}

// Legend explains the columns of the ranking; the page shows it under the table.
const Legend = "TRY/s attempts/s · 60s contended in the last minute · LAST 20s a second"

// SetSize sets the page size; the legend takes one line.
func (p *Page) SetSize(width, height int) {
	p.width = width
	p.table.SetSize(width, max(height-1, 1))
}

// SetView shows v, keeping the selected key under the cursor.
func (p *Page) SetView(v *store.View) {
	p.view = v
	s := v.Query.HotSort
	p.table.SetSorted(sortToColumn[s.Column%len(sortToColumn)], s.Reverse)
	p.selected.SetRows(p.table, len(v.Hot), p.keyAt, nil)
}

func (p *Page) keyAt(i int) string { return p.view.Hot[i].Key }

// Update moves the cursor.
func (p *Page) Update(msg tea.Msg) tea.Cmd {
	if p.view != nil {
		p.selected.Update(p.table, msg, len(p.view.Hot), p.keyAt)
	}
	return nil
}

// Selected returns the row under the cursor.
func (p *Page) Selected() (store.HotRow, bool) {
	if p.view == nil || len(p.view.Hot) == 0 {
		return store.HotRow{}, false
	}
	return p.view.Hot[p.table.Cursor()], true
}

// Counting reports whether the page changes with time alone (it does not: rates change with
// each View).
func (p *Page) Counting() bool { return false }

// View renders the rows on screen.
func (p *Page) View() string {
	st := p.common.Styles
	empty := "no contention seen yet (from lock events) · " + p.common.Keys.Sample.Help().Key +
		" samples the keys on screen (paid)"
	rows := p.table.View(func(i int) []table.Cell {
		h := p.view.Hot[i]
		c := h.Contention
		holder := "(free)"
		if h.Entry != nil {
			holder = operator.Printable(h.Entry.Owner)
		}
		return []table.Cell{
			{Text: strconv.Itoa(i + 1), Style: st.Dim},
			{Text: operator.Printable(h.Key), Style: st.Row},
			{Text: holder, Style: st.Dim},
			{Text: strconv.Itoa(c.Waiters), Style: st.Row},
			{Text: common.Rate(c.AttemptsPerSec), Style: st.Row},
			{Text: common.Rate(c.ContendedPerSec), Style: st.Row},
			{Text: strconv.Itoa(c.Contended), Style: st.Row},
			{Text: sparkline.Render(c.History, sparkWidth), Style: st.Spark},
		}
	}, empty)
	return rows + "\n" + st.Dim.Render(common.Truncate(Legend, p.width))
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Enter, k.Release, k.Sample, k.Sort}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
