package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/store"
)

// handleKey routes a key press: the dialog first, then the filter being edited, the help
// screen, the global keys, and finally the active page.
func (m *model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	km := m.common.Keys
	if k.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.dialog.Active() {
		if payload, yes := m.dialog.Answer(k); yes {
			return m.confirmed(payload)
		}
		m.setNotice("cancelled", false)
		return nil
	}
	if m.editing {
		return m.editFilter(k)
	}
	if m.showHelp {
		if key.Matches(k, km.Quit) {
			return tea.Quit
		}
		m.showHelp = false // any key closes the help
		return nil
	}
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.Help):
		m.showHelp = true
	case key.Matches(k, km.Filter):
		m.editing = true
		m.filter.SetValue(m.query.Filter)
	case key.Matches(k, km.Back):
		m.back()
	case key.Matches(k, km.NextView):
		m.switchTo((m.active + 1) % pageCount)
	case key.Matches(k, km.PrevView):
		m.switchTo((m.active + pageCount - 1) % pageCount)
	case key.Matches(k, km.Views):
		m.switchTo(page(k.String()[0] - '1'))
	case key.Matches(k, km.Enter):
		m.enter()
	case key.Matches(k, km.Sort):
		m.sort(false)
	case key.Matches(k, km.SortReverse):
		m.sort(true)
	case key.Matches(k, km.Sample):
		return m.toggleSampling()
	case key.Matches(k, km.Refresh):
		if cmd := m.refreshNow(); cmd != nil {
			m.setNotice("refreshing…", false)
			return cmd
		}
	case key.Matches(k, km.Release):
		m.askRelease()
	case key.Matches(k, km.ReleaseAll):
		m.askReleaseAll()
	case m.cfg.ReadOnly && (k.String() == "d" || k.String() == "D"):
		m.setNotice("read-only mode: releasing is disabled", true)
	default:
		cmd := m.pages[m.active].Update(k)
		return tea.Batch(cmd, m.startTicking())
	}
	return m.startTicking()
}

// editFilter handles a key while the filter is being typed: enter keeps it, esc clears it,
// anything else edits it and re-filters at once (in the hub, not here).
func (m *model) editFilter(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		m.editing = false
		return nil
	case "esc":
		m.editing = false
		m.filter.SetValue("")
		m.applyFilter("")
		return nil
	}
	if m.filter.Update(k) {
		m.applyFilter(m.filter.Value())
	}
	return nil
}

func (m *model) applyFilter(f string) {
	q := m.query
	q.Filter = f
	m.setQuery(q)
}

// back leaves the detail view, else clears the filter.
func (m *model) back() {
	switch {
	case m.active == pageDetail:
		m.switchTo(m.previous)
	case m.query.Filter != "":
		m.applyFilter("")
	}
}

// switchTo shows page p; the detail view shows the lock selected on the locks or hot page
// when none was chosen yet.
func (m *model) switchTo(p page) {
	if p < 0 || p >= pageCount || p == m.active {
		return
	}
	if p == pageDetail {
		if e, ok := m.selectedEntry(); ok && m.query.Detail == "" {
			m.showDetail(e.Key)
			return
		}
	}
	if m.active != pageDetail {
		m.previous = m.active
	}
	m.active = p
}

func (m *model) showDetail(key string) {
	if m.active != pageDetail {
		m.previous = m.active
	}
	m.active = pageDetail
	q := m.query
	q.Detail = key
	m.setQuery(q)
}

// enter opens the detail of the selected lock; on the owners page it lists the owner's locks.
func (m *model) enter() {
	switch m.active {
	case pageOwners:
		if o, ok := m.owners.Selected(); ok {
			m.applyFilter(store.Exact(true, o.Owner))
			m.active = pageLocks
		}
	case pageHot:
		if row, ok := m.hot.Selected(); ok {
			m.showDetail(row.Key)
		}
	case pageLocks:
		if e, ok := m.locks.Selected(); ok {
			m.showDetail(e.Key)
		}
	}
}

// sort moves the active table to its next sort column, or reverses it.
func (m *model) sort(reverse bool) {
	q := m.query
	next := func(s store.Sort, n int) store.Sort {
		if reverse {
			s.Reverse = !s.Reverse
			return s
		}
		return s.Next(n)
	}
	switch m.active {
	case pageLocks:
		q.LockSort = next(q.LockSort, len(store.LockColumns))
	case pageOwners:
		q.OwnerSort = next(q.OwnerSort, len(store.OwnerColumns))
	case pageHot:
		q.HotSort = next(q.HotSort, len(store.HotColumns))
	default:
		return
	}
	m.setQuery(q)
}
