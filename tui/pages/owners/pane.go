package owners

import (
	"strings"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/store"
)

// pane renders the selected group's oldest locks under the table, in p.paneRows lines: a title
// naming the group, a header, and one line per lock, oldest first (how long held, TTL, key, and
// the holder or the owner: the other grouping).
func (p *Page) pane() string {
	lines := make([]string, 0, p.paneRows)
	st := p.common.Styles
	g, name, ok := p.selectedGroup()
	if ok && p.paneRows > 0 {
		title := name + " · " + textfmt.Count(g.Keys) + plural(g.Keys, " lock", " locks")
		lines = append(lines, common.Truncate(st.HelpSection.Render(title), p.width))
	}
	other := "HOLDER"
	if p.ByProcess() {
		other = "OWNER"
	}
	keyWidth := max(p.width-2-7-1-9-2-2, 2)
	otherWidth := keyWidth * 2 / 5
	keyWidth -= otherWidth
	if ok && p.paneRows > 1 {
		lines = append(lines, st.Header.Render(common.Fit("  "+common.FitRight("HELD", 7)+" "+
			common.FitRight("TTL", 9)+"  "+common.Fit("KEY", keyWidth)+"  "+other, p.width)))
	}
	now := p.common.Now()
	room := p.paneRows - len(lines)
	shown := min(len(g.Locks), room)
	if g.Keys > shown && shown == room && shown > 0 {
		shown-- // the last line says how many more
	}
	for _, e := range g.Locks[:shown] {
		text := operator.Printable(e.Owner)
		if !p.ByProcess() {
			text = store.NoRecord
			if e.Record != nil {
				text = common.Holder(e.Record.Holder, otherWidth)
			}
		}
		line := "  " + common.FitRight(common.Held(e.HeldFor(now)), 7) + " " + common.FitRight(common.TTL(e.TTL(now)), 9) +
			"  " + st.Row.Render(common.FitMiddle(operator.Printable(e.Key), keyWidth)) + "  " +
			st.Dim.Render(common.Middle(text, otherWidth))
		lines = append(lines, common.Truncate(line, p.width))
	}
	if more := g.Keys - shown; ok && more > 0 && len(lines) < p.paneRows {
		text := "  … " + textfmt.Count(more) + " more, newer"
		if !p.ByProcess() {
			text += " (enter lists them all)"
		}
		lines = append(lines, st.Dim.Render(common.Truncate(text, p.width)))
	}
	for len(lines) < p.paneRows {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
