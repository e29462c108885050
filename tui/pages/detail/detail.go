// Package detail is the detail page of one key: its lock now, the owners seen over time and
// its contention over the last minute as a sparkline.
package detail

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/sparkline"
	"github.com/locktui/locktui/tui/store"
)

// Page is the detail of the key the View was built for (Query.Detail).
type Page struct {
	common        *common.Common
	view          *store.View
	width, height int
}

// New returns the detail page.
func New(c *common.Common) *Page { return &Page{common: c} }

// SetSize sets the page size.
func (p *Page) SetSize(width, height int) { p.width, p.height = width, height }

// SetView shows v.
func (p *Page) SetView(v *store.View) { p.view = v }

// Update does nothing: the page has no cursor.
func (p *Page) Update(tea.Msg) tea.Cmd { return nil }

// Selected returns the lock shown, if it is held.
func (p *Page) Selected() (*store.Entry, bool) {
	if p.view == nil || p.view.Detail == nil || p.view.Detail.Entry == nil {
		return nil, false
	}
	return p.view.Detail.Entry, true
}

// Counting reports whether the page changes with time alone: a countdown on screen.
func (p *Page) Counting() bool {
	e, ok := p.Selected()
	return ok && e.Counting(p.common.Now())
}

// View renders the detail.
func (p *Page) View() string {
	st := p.common.Styles
	if p.view == nil || p.view.Detail == nil {
		return lipgloss.NewStyle().Height(p.height).Render(st.Dim.Render("no key selected: press enter on a lock"))
	}
	d := p.view.Detail
	now := p.common.Now()
	label := func(s string) string { return st.StatusKey.Render(common.Fit(s, 11)) }
	var lines []string
	lines = append(lines, label("KEY")+st.Title.Render(operator.Printable(d.Key)))
	if e := d.Entry; e != nil {
		state := e.State(now)
		owner := operator.Printable(e.Owner) + st.Dim.Render("  ("+store.Kind(e.Owner)+")")
		if e.Foreign {
			owner = st.Dim.Render("none: a key of another type, not a lock")
		}
		lines = append(lines,
			label("STATE")+st.State(state).Render(state.String()),
			label("OWNER")+owner,
			label("TTL")+ttlLine(e, now),
		)
		if !e.Foreign {
			lines = append(lines, p.holderLines(e, now, label)...)
		}
		seen := ", when this console first saw this owner hold it"
		if e.Foreign {
			seen = ", when this console first saw this key of another type"
		}
		lines = append(lines,
			label("SEEN FOR")+common.Duration(e.SeenFor(now))+st.Dim.Render("  since "+e.FirstSeen.Format("15:04:05")+seen),
		)
	} else {
		lines = append(lines, label("STATE")+st.Dim.Render("not held"))
	}
	lines = append(lines, "", st.HelpSection.Render("Contention, last 60 s"))
	lines = append(lines, p.contention(d.Contention)...)
	lines = append(lines, "", st.HelpSection.Render("Owners seen"))
	for i := len(d.History) - 1; i >= 0; i-- {
		h := d.History[i]
		span := "now"
		if !h.To.IsZero() {
			span = common.Duration(h.To.Sub(h.From))
		}
		owner := operator.Printable(h.Owner)
		if h.Foreign {
			owner = st.Dim.Render("(not a lock)")
		}
		lines = append(lines, fmt.Sprintf("  %s  %s  %s", h.From.Format("15:04:05"), common.Fit(span, 7), owner))
	}
	if len(d.History) == 0 {
		lines = append(lines, st.Dim.Render("  none seen"))
	}
	for i := range lines {
		lines[i] = common.Truncate(lines[i], p.width)
	}
	if len(lines) > p.height {
		lines = lines[:p.height]
	}
	return lipgloss.NewStyle().Height(p.height).Render(strings.Join(lines, "\n"))
}

// holderLines show who holds the lock, since when and under which fencing token, from its
// holder record; or say that it has none.
func (p *Page) holderLines(e *store.Entry, now time.Time, label func(string) string) []string {
	st := p.common.Styles
	r := e.Record
	if r == nil {
		return []string{label("HOLDER") + st.Dim.Render("unknown: "+store.NoRecordWhy)}
	}
	return []string{
		label("HOLDER") + r.Holder.String(),
		label("HELD FOR") + common.Held(e.HeldFor(now)) + st.Dim.Render("  since "+
			r.AcquiredAt.Format("15:04:05")+" (Redis server time)"),
		label("FENCE") + fmt.Sprintf("%d", r.FencingToken) + st.Dim.Render("  fencing token of this hold"),
	}
}

func ttlLine(e *store.Entry, now time.Time) string {
	switch {
	case !e.GoneAt.IsZero():
		return "- (gone " + common.Duration(now.Sub(e.GoneAt)) + " ago: released or expired)"
	case e.NoTTL:
		return "never expires (NO TTL: the first suspect for a stuck owner)"
	case e.TTL(now) == provider.NoExpiry:
		return textfmt.NoExpiry
	case e.Foreign:
		return common.TTL(e.TTL(now))
	}
	return fmt.Sprintf("%s of a %s lease (the longest TTL seen)", common.TTL(e.TTL(now)), common.Lease(e.Lease))
}

func (p *Page) contention(c *store.Contention) []string {
	st := p.common.Styles
	if c == nil {
		return []string{st.Dim.Render("  none seen (from lock events; " + p.common.Keys.Sample.Help().Key + " samples, paid)")}
	}
	width := min(store.HistorySeconds, max(p.width-16, 10))
	return []string{
		fmt.Sprintf("  %d waiting · %s attempts · %s contended · %d in 60s · %d hand-offs",
			c.Waiters, common.Rate(c.AttemptsPerSec), common.Rate(c.ContendedPerSec), c.Contended, c.Handoffs),
		"  " + st.Spark.Render(sparkline.Render(c.History, width)) + st.Dim.Render(fmt.Sprintf(" max %d/s", sparkline.Max(c.History))),
		st.Dim.Render("  " + common.Fit(fmt.Sprintf("-%ds", width), width-3) + "now"),
	}
}

// ShortHelp lists the page's keys.
func (p *Page) ShortHelp() []key.Binding {
	k := p.common.Keys
	return []key.Binding{k.Back, k.Release, k.Sample}
}

// FullHelp lists the page's keys.
func (p *Page) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }
