package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/operator"
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
	if m.commanding {
		return m.editCommand(k)
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
	case key.Matches(k, km.Command):
		m.commanding = true
		m.command.SetValue("")
	case key.Matches(k, km.CopyKey):
		return m.copySelected(false)
	case key.Matches(k, km.CopyOwner):
		return m.copySelected(true)
	case key.Matches(k, km.Back):
		return m.back()
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
	case key.Matches(k, km.Group) && m.active == pageOwners:
		m.toggleGrouping()
	case key.Matches(k, km.Sample):
		return m.toggleSampling()
	case key.Matches(k, km.Refresh):
		if !m.st.Scanning && !m.st.Conn.Down {
			m.watch.Refresh()
			m.setNotice("refreshing…", false)
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
		return m.applyFilter("")
	}
	if m.filter.Update(k) {
		return m.applyFilter(m.filter.Value())
	}
	return nil
}

// applyFilter filters the tables by f; a filter that names one key exactly ("=k-stuck") also
// reads that key at once, so the operator need not wait for a scan of the whole database.
func (m *model) applyFilter(f string) tea.Cmd {
	q := m.query
	q.Filter = f
	m.setQuery(q)
	if key, ok := store.ExactKey(f); ok {
		return m.lookupKey(key)
	}
	m.lookup = lookup{}
	return nil
}

// commands are the views and actions ":" names, k9s-style; a unique prefix is enough.
var commands = []struct {
	names []string
	page  page
	quit  bool
	help  bool
}{
	{names: []string{"locks", "lock", "l"}, page: pageLocks},
	{names: []string{"owners", "owner", "o"}, page: pageOwners},
	{names: []string{"hot", "contention"}, page: pageHot},
	{names: []string{"detail", "d"}, page: pageDetail},
	{names: []string{"help", "?"}, help: true},
	{names: []string{"quit", "q", "q!"}, quit: true},
}

// findCommand returns the index in commands of the command text names exactly, else of the
// first one that a name of starts with text; -1 for none.
func findCommand(text string) int {
	for i, c := range commands {
		if slices.Contains(c.names, text) {
			return i
		}
	}
	for i, c := range commands {
		for _, n := range c.names {
			if strings.HasPrefix(n, text) {
				return i
			}
		}
	}
	return -1
}

// editCommand handles a key while ":" is being typed: enter runs it, esc drops it.
func (m *model) editCommand(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.commanding = false
		return nil
	case "enter":
		m.commanding = false
		return m.runCommand(strings.TrimSpace(m.command.Value()))
	}
	m.command.Update(k)
	return nil
}

// runCommand switches to the view text names (or quits, or shows the help).
func (m *model) runCommand(text string) tea.Cmd {
	if text == "" {
		return nil
	}
	match := findCommand(strings.ToLower(text))
	if match < 0 {
		m.setNotice(fmt.Sprintf("unknown view %q: :locks, :owners, :hot, :detail, :help or :quit", text), true)
		return nil
	}
	switch c := commands[match]; {
	case c.quit:
		return tea.Quit
	case c.help:
		m.showHelp = true
	default:
		m.switchTo(c.page)
	}
	return nil
}

// copySelected puts the selected key (or its owner) on the clipboard with OSC 52, which works
// over SSH and inside tmux (with set-clipboard on) when the terminal allows it.
func (m *model) copySelected(owner bool) tea.Cmd {
	var text, what string
	if owner {
		o, ok := m.selectedOwner()
		if !ok {
			m.noOwnerSelected()
			return nil
		}
		text, what = o, "owner"
	} else {
		e, ok := m.selectedEntry()
		if m.active == pageHot {
			if row, found := m.hot.Selected(); found {
				e, ok = &store.Entry{Key: row.Key}, true
			}
		}
		if !ok {
			m.setNotice("no lock selected", true)
			return nil
		}
		text, what = e.Key, "key"
	}
	m.setNotice(fmt.Sprintf("copied %s %s to the clipboard (OSC 52)", what, operator.Printable(text)), false)
	return tea.SetClipboard(text)
}

// back leaves the detail view, else clears the filter.
func (m *model) back() tea.Cmd {
	switch {
	case m.active == pageDetail:
		m.switchTo(m.previous)
	case m.query.Filter != "":
		return m.applyFilter("")
	}
	return nil
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

// enter opens the detail of the selected lock; on the owners page it lists the owner's locks,
// or opens the detail of the process's oldest lock.
func (m *model) enter() {
	switch m.active {
	case pageOwners:
		if r, ok := m.owners.SelectedProcess(); ok && len(r.Locks) > 0 {
			m.showDetail(r.Locks[0].Key) // the process's oldest lock: the suspect
		} else if o, ok := m.owners.Selected(); ok {
			_ = m.applyFilter(store.Exact(true, o.Owner)) // an owner filter reads nothing
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
		if q.Grouping == store.ByProcess {
			q.ProcessSort = next(q.ProcessSort, len(store.ProcessColumns))
		} else {
			q.OwnerSort = next(q.OwnerSort, len(store.OwnerColumns))
		}
	case pageHot:
		q.HotSort = next(q.HotSort, len(store.HotColumns))
	default:
		return
	}
	m.setQuery(q)
}

// toggleGrouping groups the owners view by process instead of by owner id, or back.
func (m *model) toggleGrouping() {
	q := m.query
	q.Grouping = store.ByProcess
	what := "process (from the holder records)"
	if m.query.Grouping == store.ByProcess {
		q.Grouping, what = store.ByOwner, "owner id"
	}
	m.setQuery(q)
	m.setNotice("owners grouped by "+what, false)
}
