// Package help renders the help screen: every enabled key of the console (disabled ones, such
// as the mutations in read-only mode, are left out), the filter syntax, the states, and the notes
// the root model passes in (the pages' legends, what the console costs Redis): a component, it
// imports no page.
package help

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/tui/common"
)

// Notes are the help screen's first lines below the keys: the filter and the states.
var Notes = []string{
	"filter: substring · glob * ? [ · =key (read at once) · owner:… · holder:…",
	`  a leading \ takes the rest literally: \=cart finds keys with "=cart" in them`,
	"states: NO TTL never expires · EXPIRING <20% of lease or <5s · RENEWED · GONE",
}

// View renders the help for keys in width × height: the keys, then Notes, then notes (the
// root model passes the legends of the pages' columns and what the console costs Redis).
func View(c *common.Common, keys help.KeyMap, notes []string, width, height int) string {
	st := c.Styles
	h := help.New()
	h.Styles = help.Styles{
		FullKey: st.HelpKey, FullDesc: st.HelpDesc, FullSeparator: st.Dim,
		ShortKey: st.HelpKey, ShortDesc: st.HelpDesc, ShortSeparator: st.Dim, Ellipsis: st.Dim,
	}
	h.FullSeparator = "  "
	var b strings.Builder
	b.WriteString(st.HelpSection.Render("Keys") + "\n")
	b.WriteString(fullHelp(h, keys, width))
	b.WriteString("\n" + st.HelpSection.Render("Notes"))
	for _, n := range slices.Concat(Notes, notes) {
		b.WriteString("\n" + common.Truncate(n, width))
	}
	return lipgloss.NewStyle().MaxHeight(height).Render(b.String())
}

// fullHelp renders the columns of the full help, in two rows of columns when they do not fit
// side by side.
func fullHelp(h help.Model, keys help.KeyMap, width int) string {
	groups := keys.FullHelp()
	out := h.FullHelpView(groups)
	if lipgloss.Width(out) <= width || len(groups) < 2 {
		return out
	}
	half := (len(groups) + 1) / 2
	h.SetWidth(width)
	return h.FullHelpView(groups[:half]) + "\n\n" + h.FullHelpView(groups[half:])
}

// Short renders the one-line help.
func Short(c *common.Common, keys help.KeyMap, width int) string {
	st := c.Styles
	h := help.New()
	h.Styles.ShortKey, h.Styles.ShortDesc, h.Styles.ShortSeparator, h.Styles.Ellipsis = st.HelpKey, st.Dim, st.Dim, st.Dim
	h.SetWidth(width)
	return h.ShortHelpView(keys.ShortHelp())
}
