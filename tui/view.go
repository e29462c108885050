package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/help"
	"github.com/locktui/locktui/tui/components/statusbar"
	"github.com/locktui/locktui/tui/pages/hot"
	"github.com/locktui/locktui/tui/pages/locks"
	"github.com/locktui/locktui/tui/source"
)

// chromeLines are the lines around the page: the tabs, the footer and two status lines.
const chromeLines = 4

// Minimum usable size.
const (
	minWidth  = 40
	minHeight = 10
)

// View renders the screen. Only the root returns a tea.View; it sets the alternate screen.
func (m *model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "locktui " + m.cfg.Namespace
	return v
}

func (m *model) render() string {
	w, h := m.common.Width, m.common.Height
	if w == 0 || h == 0 {
		return "starting…"
	}
	if w < minWidth || h < minHeight {
		return fmt.Sprintf("terminal too small: %d×%d, need %d×%d", w, h, minWidth, minHeight)
	}
	body := h - chromeLines
	var page string
	switch {
	case m.showHelp:
		page = help.View(m.common, m.common.Keys, slices.Concat(legends, m.costLines()), w, body)
	case m.dialog.Active():
		page = m.dialog.View()
	default:
		m.locks.SetEmpty(m.emptyText())
		page = m.pages[m.active].View()
	}
	page = lipgloss.NewStyle().Height(body).MaxHeight(body).Render(page)
	return strings.Join([]string{m.tabs(), page, m.footer(), statusbar.Render(m.common, m.status())}, "\n")
}

// tabs renders the first line: the views, the filter and the sort.
func (m *model) tabs() string {
	st := m.common.Styles
	parts := []string{st.Title.Render("locktui")}
	for i, name := range pageNames {
		label := fmt.Sprintf("%d %s", i+1, name)
		if page(i) == m.active {
			parts = append(parts, st.ActiveTab.Render(label))
		} else {
			parts = append(parts, st.Tab.Render(label))
		}
	}
	left := strings.Join(parts, "  ")
	var right []string
	if m.evicts != "" {
		// The server may evict held locks (redisconn.EvictionWarning): say it where the eye goes.
		right = append(right, st.Stale.Render(" EVICTS LOCKS: "+m.evicts+" "))
	}
	if m.cfg.ReadOnly {
		right = append(right, st.Badge.Render(" RO "))
	}
	if m.query.Filter != "" && !m.editing {
		right = append(right, st.Info.Render("/"+m.query.Filter))
		if m.st.Loaded() && m.view != nil && m.view.Query.Filter == m.query.Filter {
			right = append(right, fmt.Sprintf("%s of %s", textfmt.Count(m.view.Matched), plural(m.view.Total, "lock", "locks")))
		}
	}
	r := strings.Join(right, " ")
	gap := m.common.Width - lipgloss.Width(left) - lipgloss.Width(r)
	if gap < 1 {
		return common.Truncate(left+" "+r, m.common.Width)
	}
	return left + strings.Repeat(" ", gap) + r
}

// emptyText is what the locks table says when no row passes: never "no match" before the
// whole namespace was read.
func (m *model) emptyText() string {
	if l := m.lookup; l.key != "" {
		key := operator.Printable(l.key)
		switch {
		case !l.done:
			return "reading " + key + "…"
		case l.err != nil:
			return fmt.Sprintf("could not read %s: %v", key, l.err)
		case !l.found:
			return fmt.Sprintf("%s is not locked: no key %s (read just now)", key, operator.Printable(m.cfg.Namespace+l.key))
		}
	}
	switch {
	case m.st.Scanning && !m.st.Loaded():
		return m.scanProgress()
	case !m.st.Loaded():
		return "loading…"
	case m.query.Filter != "":
		return fmt.Sprintf("no locks match /%s (whole namespace read %s ago)", m.query.Filter,
			common.Duration(m.common.Now().Sub(m.st.LastGood)))
	}
	return "no locks under " + operator.Printable(m.cfg.Namespace)
}

// scanProgress says how far the first refresh is: never "no match" before it has read the
// whole namespace.
func (m *model) scanProgress() string {
	p := m.src.Progress()
	total := m.st.Conn.Info.Keys
	none := "no locks yet"
	if m.query.Filter != "" {
		none = "no match yet"
	}
	text := fmt.Sprintf("%s: scanned ~%s keys", none, textfmt.Count(p.Examined))
	if total > 0 {
		text = fmt.Sprintf("%s: scanned ~%s of %s keys (%d%%)", none,
			textfmt.Count(min(p.Examined, total)), textfmt.Count(total), min(100*p.Examined/total, 99))
	}
	return text + fmt.Sprintf(", %s so far", plural(p.Locks, "lock", "locks"))
}

// footer is the filter being typed, else the latest notice, else the short help.
func (m *model) footer() string {
	st := m.common.Styles
	w := m.common.Width
	switch {
	case m.editing:
		return m.filter.View(w)
	case m.commanding:
		return m.command.View(w)
	case m.notice.text != "" && (m.notice.until.IsZero() || m.common.Now().Before(m.notice.until)):
		if m.notice.err {
			return st.Error.Render(common.Truncate(m.notice.text, w))
		}
		return st.OK.Render(common.Truncate(m.notice.text, w))
	case m.dialog.Active():
		return ""
	}
	return common.Truncate(help.Short(m.common, footerKeys{m.common.Keys, m.pages[m.active]}, w), w)
}

// status gathers what the status bar says.
func (m *model) status() statusbar.Status {
	s := statusbar.Status{
		URL:       m.cfg.URL,
		DB:        m.st.Conn.Info.DB,
		Namespace: m.cfg.Namespace,
		Version:   m.st.Conn.Info.Version,
		Latency:   m.st.Conn.Latency,
		Loaded:    m.st.Loaded() && m.view != nil,
		Refresh:   m.refreshMode(),
		ReadOnly:  m.cfg.ReadOnly,
	}
	if s.URL == "" {
		s.URL = "redis"
	}
	if m.view != nil {
		s.Locks = m.view.Total
	}
	switch {
	case m.cfg.NoEvents && m.cfg.Events == nil:
		s.Events = "no events"
	case m.cfg.Events != nil || m.st.Events.On:
		s.Events = "events"
	case m.st.Events.Err != nil:
		s.Events = "no events"
	}
	s.Stale, s.Age = m.stale()
	if m.st.Conn.Down {
		s.Reconnecting = true
		s.RetryIn = max(m.st.Conn.RetryAt.Sub(m.common.Now()), 0)
	}
	if m.sampler != nil {
		st := m.sampleStats()
		s.Sampling = fmt.Sprintf("sampling %s: +%s cmds/s", common.Duration(st.Left),
			textfmt.Count(m.sampler.Cost()))
		if st.ScriptCallsPerSec > 0 {
			s.Sampling += fmt.Sprintf(", %.0f script calls/s", st.ScriptCallsPerSec)
		}
	}
	return s
}

// refreshMode says how the table is refreshed: "poll 1s", and when the budget stretched the
// interval, "poll 10s (budget 20,000/s)"; with keyspace notifications, "keyspace events +
// rescan 10m" (the drift rescan, see source.DriftInterval).
func (m *model) refreshMode() string {
	interval := m.st.Interval
	if m.st.Keyspace.On {
		return "keyspace events + rescan " + common.Duration(interval)
	}
	mode := "poll " + common.Duration(interval)
	if interval > m.cfg.Refresh && m.src.Budget() > 0 {
		mode += fmt.Sprintf(" (budget %s/s)", textfmt.Count(m.src.Budget()))
	}
	return mode
}

// legends explain the columns of the pages that define one, below the keys of the help screen.
var legends = []string{locks.Legend, "hot: " + hot.Legend}

// costLines state the console's Redis cost for the help screen, in two lines: what a refresh
// costs (SCAN walks the whole database and counts as the keys it examines) and what the last
// one cost.
func (m *model) costLines() []string {
	limit := "no budget"
	if b := m.src.Budget(); b > 0 {
		limit = "≤ " + textfmt.Count(b) + "/s"
	}
	first := fmt.Sprintf("cost: SCAN walks the whole db: %d per SCAN + %d per lock, %s · PING 1/s",
		operator.ScanCount, operator.ReadsPerKey, limit)
	st := m.st.LastScan
	if st.Scans == 0 {
		return []string{first, "  last refresh: not done yet · " + m.common.Keys.Sample.Help().Key + " (sampling) costs extra"}
	}
	last := fmt.Sprintf("  last refresh: %s SCAN (~%s keys) + %s reads = %s",
		textfmt.Count(st.Scans), textfmt.Count(st.Scans*source.ScanCount),
		textfmt.Count(st.Commands-st.Scans), textfmt.Count(st.Cost))
	if b := m.src.Budget(); b > 0 {
		secs := float64(st.Cost) / float64(b)
		switch {
		case secs >= 60:
			last += " ≥ " + common.Duration(time.Duration(secs*float64(time.Second)))
		case secs >= 0.1:
			last += fmt.Sprintf(" ≥ %.1fs", secs)
		}
	}
	return []string{first, last}
}

// footerKeys is the footer's short help: help and quit, then the active page's keys.
type footerKeys struct {
	km   *common.KeyMap
	page interface{ ShortHelp() []key.Binding }
}

// ShortHelp lists the footer's keys.
func (f footerKeys) ShortHelp() []key.Binding {
	return append([]key.Binding{f.km.Help, f.km.Quit}, f.page.ShortHelp()...)
}

// FullHelp lists the footer's keys.
func (f footerKeys) FullHelp() [][]key.Binding { return [][]key.Binding{f.ShortHelp()} }
