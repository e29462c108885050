// Package owners is the owners page: who holds how many locks and since when, grouped by owner
// id (of which kind: execute, named, anonymous "*") or by the process in the locks' holder
// records; under the table, the selected group's oldest locks and how long each is held.
package owners

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/table"
	"github.com/locktui/locktui/tui/store"
)

// Page is the table of the groups (owners or processes) and the selected group's locks.
type Page struct {
	common *common.Common
	view   *store.View
	// byOwner and byProcess are the two groupings' tables, each with its own selection.
	byOwner, byProcess           *table.Model
	ownerSel, processSel         table.Selection
	empty                        string
	width, tableHeight, paneRows int
}

// processColumn is the index of the PROCESS column of the grouping by process.
const processColumn = 1

// New returns the owners page.
func New(c *common.Common) *Page {
	byOwner := []table.Column{
		{Title: "KEYS", Width: 7, Right: true},
		{Title: "OWNER", Width: 12, Flex: 3, Middle: true},
		{Title: "KIND", Width: 9},
		{Title: "OLDEST", Width: 7, Right: true},
		{Title: "OLDEST KEY", Width: 10, Flex: 2, Middle: true},
	}
	byProcess := []table.Column{
		{Title: "KEYS", Width: 7, Right: true},
		{Title: "PROCESS", Width: 12, Flex: 3},
		{Title: "CLIENT", Width: 7},
		{Title: "OWNERS", Width: 7, Right: true},
		{Title: "OLDEST", Width: 7, Right: true},
		{Title: "OLDEST KEY", Width: 10, Flex: 2, Middle: true},
	}
	return &Page{common: c, byOwner: table.New(c, byOwner), byProcess: table.New(c, byProcess), empty: "loading…"}
}

// ownerSortColumn maps the owners sort columns to table columns; the grouping by process
// sorts on its table's columns as they are.
var ownerSortColumn = [...]int{store.OwnerByKeys: 0, store.OwnerByOwner: 1, store.OwnerByKind: 2, store.OwnerByOldest: 3}

// SetSize sets the page size: the table takes the upper part, the selected group's locks
// (a title and the locks) the lower one.
func (p *Page) SetSize(width, height int) {
	p.width = width
	pane := height / 2
	p.tableHeight = max(height-pane, 2)
	p.paneRows = max(height-p.tableHeight, 0)
	p.byOwner.SetSize(width, p.tableHeight)
	p.byProcess.SetSize(width, p.tableHeight)
}

// ByProcess reports whether the page groups the locks by process.
func (p *Page) ByProcess() bool { return p.view != nil && p.view.Query.Grouping == store.ByProcess }

// SetView shows v, keeping the selected group under the cursor.
func (p *Page) SetView(v *store.View) {
	p.view = v
	n := len(v.Owners)
	if p.ByProcess() {
		s := v.Query.ProcessSort
		p.byProcess.SetSorted(s.Column, s.Reverse)
		p.processSel.SetRows(p.byProcess, len(v.Processes), p.processAt, nil)
		n = len(v.Processes)
	} else {
		s := v.Query.OwnerSort
		p.byOwner.SetSorted(ownerSortColumn[s.Column%len(ownerSortColumn)], s.Reverse)
		p.ownerSel.SetRows(p.byOwner, len(v.Owners), p.ownerAt, nil)
	}
	if n == 0 {
		p.empty = "no owners"
		if v.Query.Filter != "" {
			p.empty = fmt.Sprintf("no owners match /%s", v.Query.Filter)
		}
	}
}

func (p *Page) ownerAt(i int) string { return p.view.Owners[i].Owner }

// processAt is the selection id of a process row: its holder's fields, or a name no holder has
// for the locks without record.
func (p *Page) processAt(i int) string {
	r := p.view.Processes[i]
	if r.NoRecord {
		return "\x00no record"
	}
	return strings.Join([]string{r.Holder.Host, strconv.Itoa(r.Holder.PID), r.Holder.Program, r.Holder.Client}, "\x00")
}

// Update moves the cursor of the table shown.
func (p *Page) Update(msg tea.Msg) tea.Cmd {
	switch {
	case p.view == nil:
	case p.ByProcess():
		p.processSel.Update(p.byProcess, msg, len(p.view.Processes), p.processAt)
	default:
		p.ownerSel.Update(p.byOwner, msg, len(p.view.Owners), p.ownerAt)
	}
	return nil
}

// Selected returns the owner under the cursor; ok is false when the page groups by process
// (a process may hold locks under several owner ids).
func (p *Page) Selected() (store.OwnerRow, bool) {
	if p.view == nil || p.ByProcess() || len(p.view.Owners) == 0 {
		return store.OwnerRow{}, false
	}
	return p.view.Owners[p.byOwner.Cursor()], true
}

// SelectedProcess returns the process under the cursor when the page groups by process.
func (p *Page) SelectedProcess() (store.ProcessRow, bool) {
	if !p.ByProcess() || len(p.view.Processes) == 0 {
		return store.ProcessRow{}, false
	}
	return p.view.Processes[p.byProcess.Cursor()], true
}

// selectedGroup is the group under the cursor, in either grouping, and its name in words.
func (p *Page) selectedGroup() (store.Group, string, bool) {
	if r, ok := p.SelectedProcess(); ok {
		if r.NoRecord {
			return r.Group, "locks without holder record (stock Medusa or an older client)", true
		}
		return r.Group, r.Holder.String(), true
	}
	if o, ok := p.Selected(); ok {
		return o.Group, "owner " + operator.Printable(o.Owner), true
	}
	return store.Group{}, "", false
}

// Counting reports whether the page changes with time alone: a TTL counting down among the
// selected group's locks on screen.
func (p *Page) Counting() bool {
	g, _, ok := p.selectedGroup()
	if !ok {
		return false
	}
	now := p.common.Now()
	for _, e := range g.Locks[:min(len(g.Locks), p.paneRows)] {
		if e.Counting(now) {
			return true
		}
	}
	return false
}

// View renders the groups on screen and the selected group's locks.
func (p *Page) View() string {
	if p.view == nil {
		return p.byOwner.View(nil, p.empty) + strings.Repeat("\n", p.paneRows+1)
	}
	now := p.common.Now()
	st := p.common.Styles
	var rows string
	if p.ByProcess() {
		rows = p.byProcess.View(func(i int) []table.Cell {
			r := p.view.Processes[i]
			process, client, style := common.Holder(r.Holder, p.byProcess.Width(processColumn)), r.Holder.Client, st.Row
			if r.NoRecord {
				process, client, style = store.NoRecordGroup, "-", st.Dim
			}
			return []table.Cell{
				{Text: textfmt.Count(r.Keys), Style: st.Row},
				{Text: process, Style: style},
				{Text: client, Style: st.Dim},
				{Text: textfmt.Count(r.Owners), Style: st.Row},
				{Text: oldest(r.Group, now), Style: st.Row},
				{Text: operator.Printable(r.OldestKey), Style: st.Dim},
			}
		}, p.empty)
	} else {
		rows = p.byOwner.View(func(i int) []table.Cell {
			o := p.view.Owners[i]
			return []table.Cell{
				{Text: textfmt.Count(o.Keys), Style: st.Row},
				{Text: operator.Printable(o.Owner), Style: st.Row},
				{Text: o.Kind, Style: st.Dim},
				{Text: oldest(o.Group, now), Style: st.Row},
				{Text: operator.Printable(o.OldestKey), Style: st.Dim},
			}
		}, p.empty)
	}
	return rows + "\n" + p.pane()
}

// oldest is how long the group's oldest lock has been held, "≥" when it may be older.
func oldest(g store.Group, now time.Time) string {
	return common.Held(max(now.Sub(g.Oldest), 0), !g.LowerBound)
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Group, k.Filter, k.Enter, k.ReleaseAll, k.Sort}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
