// Package locks is the main page: a live table of every lock under the namespace.
package locks

import (
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
	"github.com/locktui/locktui/tui/store"
)

// Legend explains the columns of the locks table (the help screen shows it).
const Legend = "HELD since taken (≥: seen here, no record) · WAIT waiting · CONT/s last 10s"

// Page is the locks table and, under it, the selected lock's key and owner on one line (whole
// when they fit, see selectedLine) and its holder on the next.
// The cursor follows the selected key when the rows are re-sorted, except while the first
// refresh is loading (then it stays on the top row, where the NO TTL suspects sort, until the
// operator moves it) and when the selected lock goes (then it stays where it was, among the
// live rows, instead of following the GONE row to the end: stayIfGone).
type Page struct {
	common   *common.Common
	table    *table.Model
	view     *store.View
	selected table.Selection
	empty    string
	width    int
	// pinned keeps the cursor on the top row (see Page).
	pinned bool
}

// New returns the locks page.
func New(c *common.Common) *Page {
	cols := []table.Column{
		{Title: "STATE", Width: 8},
		{Title: "KEY", Width: 12, Flex: 3, Middle: true},
		{Title: "OWNER", Width: 8, Flex: 2, Middle: true},
		{Title: "HOLDER", Width: 12, Flex: 2},
		{Title: "TTL", Width: 9, Right: true},
		{Title: "HELD", Width: 6, Right: true},
		{Title: "WAIT", Width: 4, Right: true},
		{Title: "CONT/s", Width: 6, Right: true},
	}
	return &Page{common: c, table: table.New(c, cols), empty: "loading…", pinned: true}
}

// selectedLines is the height of the selected lock's lines under the table.
const selectedLines = 2

// holderColumn is the index of the HOLDER column.
const holderColumn = 3

// SetSize sets the page size; the selected lock's lines take two.
func (p *Page) SetSize(width, height int) {
	p.width = width
	p.table.SetSize(width, max(height-selectedLines, 1))
}

// SetEmpty sets what the table says when it has no rows (the root model knows whether a
// refresh is under way, how far it is, and what an exact lookup found).
func (p *Page) SetEmpty(text string) { p.empty = text }

// SetView shows v, keeping the selected key under the cursor (the top row while pinned). The
// first View that holds a complete full scan (v.Scanned) is still shown with the cursor on the
// top row, and ends the pinning: the end of the first refresh is told by the View itself, not
// by the watcher's status, which may arrive before the View with the scan's last locks (on a
// Cluster, the masters' batches come in any order).
func (p *Page) SetView(v *store.View) {
	old := p.view
	p.view = v
	p.table.SetSorted(v.Query.LockSort.Column, v.Query.LockSort.Reverse)
	if p.pinned {
		p.table.SetCursor(0)
		p.selected.Reset()
		p.pinned = !v.Scanned
	}
	p.stayIfGone(old, v)
	p.selected.SetRows(p.table, len(v.Locks), p.keyAt, v.Index)
}

// stayIfGone keeps the cursor in its place when the selected lock was live in old and is GONE
// in v (released with d, or expired): the lock that takes its place is selected, or the last
// live one when it was the last, as k9s does after a delete, instead of the cursor following
// the GONE row to the end of the table, away from the NO TTL suspects at the top.
func (p *Page) stayIfGone(old, v *store.View) {
	id := p.selected.ID()
	if old == nil || id == "" {
		return
	}
	i, j := old.Index(id), v.Index(id)
	if i < 0 || j < 0 || !old.Locks[i].GoneAt.IsZero() || v.Locks[j].GoneAt.IsZero() {
		return
	}
	live := 0
	for live < len(v.Locks) && v.Locks[live].GoneAt.IsZero() {
		live++
	}
	p.table.SetCursor(min(p.table.Cursor(), max(live-1, 0)))
	p.selected.Reset()
}

func (p *Page) keyAt(i int) string { return p.view.Locks[i].Key }

// Update moves the cursor; a move ends the pinning to the top row.
func (p *Page) Update(msg tea.Msg) tea.Cmd {
	if p.view != nil && p.selected.Update(p.table, msg, len(p.view.Locks), p.keyAt) {
		p.pinned = false
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

// View renders the rows on screen and the selected lock's line.
func (p *Page) View() string {
	now := p.common.Now()
	st := p.common.Styles
	rows := p.table.View(func(i int) []table.Cell {
		e := p.view.Locks[i]
		state := e.State(now)
		wait, cont := "-", "-"
		if c := p.view.Contention[e.Key]; c != nil {
			cont = common.Rate(c.ContendedPerSec)
			if c.Waiters > 0 {
				wait = strconv.Itoa(c.Waiters)
			}
		}
		dim := st.Row
		if state == store.StateGone {
			dim = st.Dim
		}
		return []table.Cell{
			{Text: state.String(), Style: st.State(state)},
			{Text: operator.Printable(e.Key), Style: dim},
			{Text: ownerText(e), Style: dim},
			p.holderCell(e, dim),
			{Text: ttlText(e, state, now), Style: st.State(state)},
			{Text: common.Held(e.HeldFor(now)), Style: dim},
			{Text: wait, Style: dim},
			{Text: cont, Style: dim},
		}
	}, p.empty)
	return rows + "\n" + p.selectedLine() + "\n" + p.holderLine(now)
}

// ttlText is the TTL column: "-" for a GONE lock, which has no TTL left to count down (a
// "0.0s" would read as about to expire).
func ttlText(e *store.Entry, state store.State, now time.Time) string {
	if state == store.StateGone {
		return "-"
	}
	return common.TTL(e.TTL(now))
}

// holderCell names the process in the lock's holder record, shortened for the HOLDER column;
// store.NoRecord, dimmed, when there is none; "-" for a key that is not a lock.
func (p *Page) holderCell(e *store.Entry, style lipgloss.Style) table.Cell {
	switch {
	case e.Foreign:
		return table.Cell{Text: "-", Style: p.common.Styles.Dim}
	case e.Record == nil:
		return table.Cell{Text: store.NoRecord, Style: p.common.Styles.Dim}
	}
	return table.Cell{Text: common.Holder(e.Record.Holder, p.table.Width(holderColumn)), Style: style}
}

// holderLine names the selected lock's holder in full, how long it has held the lock and,
// when the width allows, since when (Redis server time).
func (p *Page) holderLine(now time.Time) string {
	st := p.common.Styles
	e, ok := p.Selected()
	if !ok || e.Foreign {
		return ""
	}
	const label = "holder "
	if e.Record == nil {
		return common.Truncate(st.StatusKey.Render(label)+st.Dim.Render(store.NoRecordWhy+
			", seen for "+common.Duration(e.SeenFor(now))), p.width)
	}
	since, _ := e.HeldSince()
	line := label + e.Record.Holder.String() + " · held " + common.Held(e.HeldFor(now))
	if at := " since " + since.Format("15:04:05"); ansi.StringWidth(line+at) <= p.width {
		line += at
	}
	return common.Truncate(st.StatusKey.Render(label)+line[len(label):], p.width)
}

// ownerText is the owner as the table shows it: escaped and quoted when it is not plain (the
// empty owner reads ""), "(not a string)" for a key of another type.
func ownerText(e *store.Entry) string {
	if e.Foreign {
		return "(not a string)"
	}
	return operator.Printable(e.Owner)
}

// selectedLine shows the selected lock's whole key and owner, shortened in their middle only
// when together they do not fit the width.
func (p *Page) selectedLine() string {
	st := p.common.Styles
	e, ok := p.Selected()
	if !ok {
		return ""
	}
	key, owner := operator.Printable(e.Key), ownerText(e)
	const keyLabel, ownerLabel = "key ", "  owner "
	room := p.width - len(keyLabel) - len(ownerLabel)
	if kw, ow := ansi.StringWidth(key), ansi.StringWidth(owner); kw+ow > room {
		// The owner gives way first, down to 16 cells: the key is what the operator acts on.
		keyRoom := max(room-ow, room-min(ow, 16))
		key = common.Middle(key, keyRoom)
		owner = common.Middle(owner, room-ansi.StringWidth(key))
	}
	return common.Truncate(st.StatusKey.Render(keyLabel)+st.Title.Render(key)+
		st.StatusKey.Render(ownerLabel)+owner, p.width)
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Filter, k.Enter, k.Release, k.ReleaseAll, k.Sort}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
