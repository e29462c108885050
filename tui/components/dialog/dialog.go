// Package dialog is the confirmation dialog of the console's mutations: it names what will be
// done and is answered with "y" (or, when the dialog offers one, its alternative key); any other
// key cancels.
package dialog

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/tui/common"
)

// Model is a yes/no question with a payload the caller gets back on "y".
type Model struct {
	common  *common.Common
	title   string
	lines   []string
	payload any
	alt     Alt // the alternative answer, if any
	active  bool
	width   int
	height  int
}

// New returns a closed dialog.
func New(c *common.Common) *Model { return &Model{common: c} }

// Alt is a second way to confirm: Key answers with Payload instead of the dialog's own.
type Alt struct {
	Key, Label string
	Payload    any
}

// Open asks title with the explanation lines; payload comes back from Answer.
func (m *Model) Open(title string, lines []string, payload any) {
	m.OpenWithAlt(title, lines, payload, Alt{})
}

// OpenWithAlt is Open with an alternative answer (alt.Key empty: none).
func (m *Model) OpenWithAlt(title string, lines []string, payload any, alt Alt) {
	m.title, m.lines, m.payload, m.alt, m.active = title, lines, payload, alt, true
}

// Active reports whether the dialog is open.
func (m *Model) Active() bool { return m.active }

// Answer closes the dialog with the key pressed: it returns the payload and true for "y", the
// alternative's payload and true for its key, nil and false for anything else.
func (m *Model) Answer(k tea.KeyPressMsg) (any, bool) {
	m.active = false
	p, alt := m.payload, m.alt
	m.payload, m.alt = nil, Alt{}
	switch {
	case k.String() == "y":
		return p, true
	case alt.Key != "" && k.String() == alt.Key:
		return alt.Payload, true
	}
	return nil, false
}

// SetSize sets the area the dialog is centred in.
func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

// View renders the dialog centred in its area.
func (m *Model) View() string {
	st := m.common.Styles
	inner := max(min(m.width-4, 72), 10)
	var b strings.Builder
	b.WriteString(st.DialogTitle.Render(common.Truncate(m.title, inner)))
	for _, l := range m.lines {
		b.WriteString("\n" + lipgloss.NewStyle().Width(inner).Render(l))
	}
	b.WriteString("\n\n" + st.HelpKey.Render("y") + " " + st.HelpDesc.Render("confirm"))
	if m.alt.Key != "" {
		b.WriteString("   " + st.HelpKey.Render(m.alt.Key) + " " + st.HelpDesc.Render(m.alt.Label))
	}
	b.WriteString("   " + st.HelpKey.Render("any other key") + " " + st.HelpDesc.Render("cancel"))
	box := st.Dialog.Render(b.String())
	return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, box)
}
