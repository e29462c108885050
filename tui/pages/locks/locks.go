// Package locks is the main page: a live table of every lock under the namespace.
package locks

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
	"github.com/locktui/locktui/tui/store"
)

// Page is the locks table. The cursor follows the selected key when the rows are re-sorted.
type Page struct {
	common   *common.Common
	table    *table.Model
	view     *store.View
	selected table.Selection
	empty    string
}

// New returns the locks page.
func New(c *common.Common) *Page {
	cols := []table.Column{
		{Title: "STATE", Width: 8},
		{Title: "KEY", Width: 10, Flex: 3},
		{Title: "OWNER", Width: 8, Flex: 2},
		{Title: "TTL", Width: 7, Right: true},
		{Title: "HELD", Width: 7, Right: true},
		{Title: "CONTENTION", Width: 10, Right: true},
	}
	return &Page{common: c, table: table.New(c, cols), empty: "loading…"}
}

// SetSize sets the page size.
func (p *Page) SetSize(width, height int) { p.table.SetSize(width, height) }

// SetView shows v, keeping the selected key under the cursor.
func (p *Page) SetView(v *store.View) {
	p.view = v
	p.table.SetSorted(v.Query.LockSort.Column, v.Query.LockSort.Reverse)
	p.selected.SetRows(p.table, len(v.Locks), p.keyAt, v.Index)
	if len(v.Locks) == 0 {
		p.empty = "no locks"
		if v.Query.Filter != "" {
			p.empty = fmt.Sprintf("no locks match /%s", v.Query.Filter)
		}
	}
}

func (p *Page) keyAt(i int) string { return p.view.Locks[i].Key }

// Update moves the cursor.
func (p *Page) Update(msg tea.Msg) tea.Cmd {
	if p.view != nil {
		p.selected.Update(p.table, msg, len(p.view.Locks), p.keyAt)
	}
	return nil
}

// Selected returns the lock under the cursor.
func (p *Page) Selected() (*store.Entry, bool) {
	if p.view == nil || len(p.view.Locks) == 0 {
		return nil, false
	}
	return p.view.Locks[p.table.Cursor()], true
}

// Visible returns the keys on screen, the selected one first (for sampling).
func (p *Page) Visible() []string {
	if p.view == nil {
		return nil
	}
	from, to := p.table.Window()
	out := make([]string, 0, to-from)
	if e, ok := p.Selected(); ok {
		out = append(out, e.Key)
	}
	for i := from; i < to; i++ {
		if k := p.view.Locks[i].Key; k != p.selected.ID() {
			out = append(out, k)
		}
	}
	return out
}

// Counting reports whether a row on screen changes with time alone.
func (p *Page) Counting() bool {
	if p.view == nil {
		return false
	}
	now := p.common.Now()
	from, to := p.table.Window()
	for i := from; i < to; i++ {
		if p.view.Locks[i].Counting(now) {
			return true
		}
	}
	return false
}

// View renders the rows on screen.
func (p *Page) View() string {
	now := p.common.Now()
	st := p.common.Styles
	return p.table.View(func(i int) []table.Cell {
		e := p.view.Locks[i]
		state := e.State(now)
		cont := "-"
		if c := p.view.Contention[e.Key]; c != nil {
			cont = fmt.Sprintf("%dw %s", c.Waiters, common.Rate(c.ContendedPerSec))
		}
		owner := e.Owner
		if e.Foreign {
			owner = "(not a string)"
		}
		dim := st.Row
		if state == store.StateGone {
			dim = st.Dim
		}
		return []table.Cell{
			{Text: state.String(), Style: st.State(state)},
			{Text: e.Key, Style: dim},
			{Text: owner, Style: dim},
			{Text: common.TTL(e.TTL(now)), Style: st.State(state)},
			{Text: common.Duration(e.HeldFor(now)), Style: dim},
			{Text: cont, Style: dim},
		}
	}, p.empty)
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Filter, k.Enter, k.Release, k.ReleaseAll, k.Sort}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
