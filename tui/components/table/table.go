// Package table is a table with virtual scrolling: it knows only the number of rows and asks
// for the cells of the rows on screen, so 100,000 rows cost what 20 do.
package table

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/tui/common"
)

// Column describes one column.
type Column struct {
	Title string
	// Width is the column's width in cells, or its minimum width when Flex > 0.
	Width int
	// Flex shares the width left over by the fixed columns among the flex columns, in
	// proportion.
	Flex int
	// Right aligns the column right.
	Right bool
	// Middle shortens a text too wide for the column in its middle, keeping its start and its
	// end (keys and owner ids that share a prefix differ at their end), instead of its end.
	Middle bool
}

// Cell is one cell: its text and the style to render it with (ignored on the selected row,
// which is rendered in reverse video whole).
type Cell struct {
	Text  string
	Style lipgloss.Style
}

// CellFunc returns the cells of row i.
type CellFunc func(i int) []Cell

// Model is the table state: columns, row count, cursor and scroll offset.
type Model struct {
	common  *common.Common
	columns []Column
	widths  []int
	rows    int
	cursor  int
	offset  int
	width   int
	height  int
	// sorted marks the column the rows are sorted by (-1 for none), reverse its direction.
	sorted  int
	reverse bool
}

// New returns a table of columns.
func New(c *common.Common, columns []Column) *Model {
	return &Model{common: c, columns: columns, sorted: -1}
}

// SetSize sets the table's size; the header takes one line.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.layout()
	m.clamp()
}

// SetRows sets the number of rows, keeping the cursor in range.
func (m *Model) SetRows(n int) {
	m.rows = n
	m.clamp()
}

// Rows returns the number of rows.
func (m *Model) Rows() int { return m.rows }

// Cursor returns the selected row (0 when there are none).
func (m *Model) Cursor() int { return m.cursor }

// SetCursor selects row i and scrolls it into view.
func (m *Model) SetCursor(i int) {
	m.cursor = i
	m.clamp()
}

// SetSorted marks column col as the sort column in the header (-1: none).
func (m *Model) SetSorted(col int, reverse bool) { m.sorted, m.reverse = col, reverse }

// visible is the number of row lines.
func (m *Model) visible() int { return max(m.height-1, 1) }

func (m *Model) clamp() {
	m.cursor = max(min(m.cursor, m.rows-1), 0)
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+m.visible() {
		m.offset = m.cursor - m.visible() + 1
	}
	m.offset = max(min(m.offset, m.rows-m.visible()), 0)
}

func (m *Model) layout() {
	m.widths = make([]int, len(m.columns))
	fixed, flex := len(m.columns)-1, 0 // one space between columns
	for i, c := range m.columns {
		m.widths[i] = c.Width
		fixed += c.Width
		flex += c.Flex
	}
	spare := m.width - fixed
	if spare <= 0 || flex == 0 {
		return
	}
	given := 0
	last := -1
	for i, c := range m.columns {
		if c.Flex > 0 {
			add := spare * c.Flex / flex
			m.widths[i] += add
			given += add
			last = i
		}
	}
	m.widths[last] += spare - given
}

// Update moves the cursor on navigation keys and reports whether it handled msg.
func (m *Model) Update(msg tea.Msg) bool {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return false
	}
	km := m.common.Keys
	switch {
	case key.Matches(k, km.Up):
		m.SetCursor(m.cursor - 1)
	case key.Matches(k, km.Down):
		m.SetCursor(m.cursor + 1)
	case key.Matches(k, km.PageUp):
		m.SetCursor(m.cursor - m.visible())
	case key.Matches(k, km.PageDown):
		m.SetCursor(m.cursor + m.visible())
	case key.Matches(k, km.Top):
		m.SetCursor(0)
	case key.Matches(k, km.Bottom):
		m.SetCursor(m.rows - 1)
	default:
		return false
	}
	return true
}

// Width returns the width of column col as laid out for the table's width: what a page
// shortens a text to when it knows better than Middle how (0 before SetSize).
func (m *Model) Width(col int) int {
	if col < 0 || col >= len(m.widths) {
		return 0
	}
	return m.widths[col]
}

// Window returns the rows on screen: [from, to).
func (m *Model) Window() (from, to int) {
	return m.offset, min(m.offset+m.visible(), m.rows)
}

// View renders the header and the rows on screen; empty is shown when there are no rows.
func (m *Model) View(cells CellFunc, empty string) string {
	st := m.common.Styles
	var b strings.Builder
	header := make([]string, len(m.columns))
	for i, c := range m.columns {
		title := c.Title
		if i == m.sorted {
			if m.reverse {
				title += "↑"
			} else {
				title += "↓"
			}
		}
		header[i] = m.fit(i, title)
	}
	b.WriteString(st.Header.Render(common.Fit(strings.Join(header, " "), m.width)))
	lines := 1
	if m.rows == 0 {
		b.WriteString("\n" + st.Dim.Render(common.Fit(empty, m.width)))
		lines++
	}
	from, to := m.Window()
	parts := make([]string, len(m.columns))
	for i := from; i < to; i++ {
		row := cells(i)
		if i == m.cursor {
			for c := range m.columns {
				parts[c] = m.fit(c, cellText(row, c))
			}
			b.WriteString("\n" + st.Selected.Render(common.Fit(strings.Join(parts, " "), m.width)))
		} else {
			for c := range m.columns {
				text := m.fit(c, cellText(row, c))
				if c < len(row) {
					text = row[c].Style.Render(text)
				}
				parts[c] = text
			}
			b.WriteString("\n" + common.Truncate(strings.Join(parts, " "), m.width))
		}
		lines++
	}
	for ; lines < m.height; lines++ {
		b.WriteString("\n")
	}
	return b.String()
}

func cellText(row []Cell, c int) string {
	if c < len(row) {
		return row[c].Text
	}
	return ""
}

func (m *Model) fit(col int, s string) string {
	switch c := m.columns[col]; {
	case c.Right:
		return common.FitRight(s, m.widths[col])
	case c.Middle:
		return common.FitMiddle(s, m.widths[col])
	}
	return common.Fit(s, m.widths[col])
}
